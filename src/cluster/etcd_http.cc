#include "cluster/etcd_http.h"

#include "cluster/etcd_base64.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::cluster::etcd {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {

void init_curl_once() {
  // curl_global_init is not thread-safe; every Http calls it through here before any request.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// Per thread: the caller of post() reads the reply in the same thread, right after.
thread_local std::string last_answered;

long millis_until(Clock::time_point t) {
  auto ms = std::chrono::duration_cast<milliseconds>(t - Clock::now()).count();
  return static_cast<long>(std::max<std::int64_t>(ms, 1));
}

// etcd's message from an error reply: {"error": "...", "message": "...", "code": N} for a
// call, {"error": {"message": ..., "http_code": ...}} inside a stream.
std::string error_message(const json& reply) {
  if (reply.is_object()) {
    if (reply.contains("message") && reply["message"].is_string()) return reply["message"].get<std::string>();
    if (reply.contains("error")) {
      const json& e = reply["error"];
      if (e.is_string()) return e.get<std::string>();
      if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
    }
  }
  return reply.dump().substr(0, 200);
}

}  // namespace

struct Http::Attempt {
  std::string_view what;
  std::string body;
  std::size_t limit = 0;
  const std::function<bool(const json&)>* on_result = nullptr;  // streams only
  CURL* curl = nullptr;
  std::string received;  // the whole reply, or a stream's unfinished message
  bool too_large = false;
  bool stopped = false;  // on_result asked to stop
  std::string stream_error;
  std::exception_ptr failure;  // thrown by on_result

  void reset() {
    received.clear();
    too_large = stopped = false;
    stream_error.clear();
    failure = nullptr;
  }

  // Hands every complete line of a stream to on_result; returns false to stop reading.
  bool consume_lines() {
    std::size_t start = 0;
    for (std::size_t nl; (nl = received.find('\n', start)) != std::string::npos; start = nl + 1) {
      json m = json::parse(received.begin() + static_cast<std::ptrdiff_t>(start),
                           received.begin() + static_cast<std::ptrdiff_t>(nl), nullptr, false);
      if (m.is_discarded() || !m.is_object()) {
        stream_error = "a stream message is not JSON";
        return false;
      }
      if (m.contains("error")) {
        stream_error = error_message(m);
        return false;
      }
      if (m.contains("result") && !(*on_result)(m["result"])) {
        stopped = true;
        return false;
      }
    }
    received.erase(0, start);
    return true;
  }

  static std::size_t on_data(char* data, std::size_t size, std::size_t count, void* user) {
    auto& a = *static_cast<Attempt*>(user);
    std::size_t n = size * count;
    // Checked before buffering: a member (or anything at its port) cannot make us hold more.
    if (n > a.limit || a.received.size() > a.limit - n) {
      a.too_large = true;
      return 0;
    }
    a.received.append(data, n);
    if (a.on_result == nullptr) return n;
    long status = 0;
    curl_easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) return n;  // an error reply: read whole, judged after
    // Nothing may be thrown through curl's C frames: kept, and rethrown after it returns.
    try {
      return a.consume_lines() ? n : 0;
    } catch (...) {
      a.failure = std::current_exception();
      return 0;
    }
  }
};

Http::Http(EtcdOptions options) : options_(std::move(options)) {
  TRIB_CHECK(!options_.endpoints.empty(), InvalidArgument, "etcd: no endpoints given (expected etcd://host:port,...)");
  TRIB_CHECK(options_.operation_timeout.count() > 0 && options_.attempt_timeout.count() > 0 &&
                 options_.first_attempt_timeout.count() > 0 && options_.watch_round.count() > 0 &&
                 options_.connect_timeout.count() > 0 && options_.backoff_min.count() > 0 &&
                 options_.backoff_max >= options_.backoff_min && options_.max_response_bytes > 0,
             InvalidArgument, "etcd: timeouts, backoff and max_response_bytes must be positive (backoff_max >= min)");
  init_curl_once();
}

std::string Http::attempt(Attempt& a, const std::string& url, Clock::time_point until) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return "curl_easy_init failed";
  std::unique_ptr<curl_slist, HeaderListDeleter> headers(curl_slist_append(nullptr, "Content-Type: application/json"));
  a.reset();
  a.curl = curl.get();
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, a.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(a.body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Attempt::on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");  // the members are reached directly, whatever http_proxy says
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, millis_until(until));
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);

  if (a.failure) std::rethrow_exception(a.failure);
  if (a.too_large)
    throw Corruption(fmt::format("etcd {}: {}: the reply exceeds the {}-byte limit", url, a.what,
                                 options_.max_response_bytes));
  if (a.on_result != nullptr) {
    if (a.stopped) return "";
    if (rc == CURLE_OPERATION_TIMEDOUT && status == 200 && Clock::now() + milliseconds(20) >= until) return "";
    if (!a.stream_error.empty()) return a.stream_error;
  }
  if (rc != CURLE_OK) return curl_easy_strerror(rc);
  if (status >= 200 && status < 300) return a.on_result ? "the member closed the stream" : "";
  json reply = json::parse(a.received, nullptr, false);
  std::string message = fmt::format("HTTP {}: {}", status, error_message(reply));
  // The member's own trouble (no leader, shutting down, overloaded, timed out): try another.
  if (status >= 500 || status == 429 || status == 408) return message;
  if (status == 404 && a.received.find("\"code\"") == std::string::npos)
    throw NotFound(fmt::format("etcd {}: {}: {} (is this etcd's v3 JSON gateway?)", url, a.what, message));
  if (status == 404) throw NotFound(fmt::format("etcd {}: {}: {}", url, a.what, message));
  throw InvalidArgument(fmt::format("etcd {}: {}: {}", url, a.what, message));
}

void Http::backoff(int round, Clock::time_point until) {
  auto wait = options_.backoff_min * (std::int64_t{1} << std::min(round, 16));
  std::this_thread::sleep_until(std::min(until, Clock::now() + std::min(wait, options_.backoff_max)));
}

json Http::post(std::string_view path, const json& body, std::string_view what, Clock::time_point deadline,
                milliseconds attempt_timeout) {
  if (attempt_timeout.count() <= 0) attempt_timeout = options_.attempt_timeout;
  Attempt a;
  a.what = what;
  a.body = body.dump();
  a.limit = options_.max_response_bytes;
  const auto& eps = options_.endpoints;
  std::vector<std::string> errors(eps.size(), "not tried");
  auto start = Clock::now();
  for (int round = 0;; ++round) {
    std::size_t first = current_.load();
    auto per_member = std::min(attempt_timeout, options_.first_attempt_timeout * (std::int64_t{1} << std::min(round, 16)));
    for (std::size_t k = 0; k < eps.size() && Clock::now() < deadline; ++k) {
      std::size_t i = (first + k) % eps.size();
      std::string error = attempt(a, eps[i].base_url() + std::string(path),
                                  std::min(deadline, Clock::now() + per_member));
      if (error.empty()) {
        json reply = json::parse(a.received, nullptr, false);
        if (!reply.is_discarded() && reply.is_object()) {
          current_ = i;
          last_answered = eps[i].to_string();
          return reply;
        }
        error = "the reply is not a JSON object";
      }
      errors[i] = std::move(error);
    }
    if (Clock::now() >= deadline) {
      std::vector<std::string> each;
      for (std::size_t i = 0; i < eps.size(); ++i) each.push_back(fmt::format("{}: {}", eps[i].to_string(), errors[i]));
      throw Unavailable(fmt::format("etcd: {}: no member answered within {} ms ({})", what,
                                    std::chrono::duration_cast<milliseconds>(Clock::now() - start).count(),
                                    fmt::join(each, "; ")));
    }
    backoff(round, deadline);
  }
}

void Http::stream(std::string_view path, const json& body, std::string_view what, Clock::time_point until,
                  const std::function<bool(const json&)>& on_result) {
  Attempt a;
  a.what = what;
  a.body = body.dump();
  a.limit = options_.max_response_bytes;
  a.on_result = &on_result;
  const auto& eps = options_.endpoints;
  for (int round = 0;; ++round) {
    std::size_t first = current_.load();
    for (std::size_t k = 0; k < eps.size(); ++k) {
      if (Clock::now() >= until) return;
      std::size_t i = (first + k) % eps.size();
      last_answered = eps[i].to_string();  // for errors about what the stream brings
      if (attempt(a, eps[i].base_url() + std::string(path), until).empty()) {
        current_ = i;
        return;
      }
    }
    // Nothing to report: a wait that ends without news is not an error, and the caller's
    // next read says what is wrong if no member answers.
    if (Clock::now() >= until) return;
    backoff(round, until);
  }
}

std::string answered_by() { return last_answered; }

std::string from_member(std::string_view what) { return fmt::format("{} from {}", what, last_answered); }

namespace {

Corruption bad_field(std::string_view what, const char* name, const char* expected, const json& v) {
  return Corruption(fmt::format("etcd {}{}{}: field '{}' of the reply is not {}: {}", last_answered,
                                what.empty() ? "" : ": ", what, name, expected, v.dump().substr(0, 100)));
}

}  // namespace

std::int64_t int_field(const json& object, const char* name, std::string_view what) {
  if (!object.is_object() || !object.contains(name)) return 0;
  const json& v = object[name];
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    std::int64_t out = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && end == s.data() + s.size()) return out;
  }
  throw bad_field(what, name, "an integer", v);
}

std::string string_field(const json& object, const char* name, std::string_view what) {
  if (!object.is_object() || !object.contains(name)) return "";
  const json& v = object[name];
  if (v.is_string()) return v.get<std::string>();
  throw bad_field(what, name, "a string", v);
}

bool bool_field(const json& object, const char* name, std::string_view what) {
  if (!object.is_object() || !object.contains(name)) return false;
  const json& v = object[name];
  if (v.is_boolean()) return v.get<bool>();
  throw bad_field(what, name, "true or false", v);
}

void watch_prefix_once(Http& http, const std::string& prefix, std::int64_t after, Clock::time_point until) {
  nlohmann::json watch = {{"create_request",
                           {{"key", base64_encode(prefix)},
                            {"range_end", base64_encode(prefix_end(prefix))},
                            {"start_revision", std::to_string(after + 1)}}}};
  auto round_end = std::min(until, Clock::now() + http.options().watch_round);
  http.stream("/v3/watch", watch, fmt::format("watch '{}'", prefix), round_end, [](const nlohmann::json& result) {
    bool events = result.contains("events") && result["events"].is_array() && !result["events"].empty();
    return !(events || bool_field(result, "canceled"));
  });
}

}  // namespace trib::cluster::etcd
