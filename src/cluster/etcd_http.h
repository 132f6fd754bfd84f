// etcd's v3 API as JSON over HTTP (its grpc-gateway), with failover: a request goes to the
// member that answered last; when that member is down, cut off or leaderless, the next one
// is tried, with backoff after each round, until the operation's deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trib/cluster/etcd_options.h"

namespace trib::cluster::etcd {

using Clock = std::chrono::steady_clock;

class Http {
 public:
  explicit Http(EtcdOptions options);

  const EtcdOptions& options() const { return options_; }
  Clock::time_point deadline() const { return Clock::now() + options_.operation_timeout; }

  // POSTs `body` to `path` ("/v3/kv/range") and returns the reply. Retries on another member
  // while the failure is the member's (no connection, no reply, HTTP 5xx); throws at once on
  // a refusal (HTTP 4xx: InvalidArgument or NotFound with etcd's message), and Unavailable
  // after `deadline`. Every error names the endpoint(s) and `what` (the operation and key).
  // A retried request may have been applied already: callers make their writes idempotent.
  // `attempt_timeout` (0: the options') bounds each try at one member; the first round's
  // tries get first_attempt_timeout, doubling each round up to it.
  nlohmann::json post(std::string_view path, const nlohmann::json& body, std::string_view what,
                      Clock::time_point deadline, std::chrono::milliseconds attempt_timeout = {});

  // Opens the stream at `path` (a watch) and hands each message's "result" to `on_result`
  // until it returns false. Returns at `until` as well. A broken stream is reopened on the
  // next member; `on_result` sees a message at most once per opening.
  void stream(std::string_view path, const nlohmann::json& body, std::string_view what, Clock::time_point until,
              const std::function<bool(const nlohmann::json&)>& on_result);

 private:
  struct Attempt;
  // One try at one endpoint; returns "" on success, else why it failed (for the error).
  std::string attempt(Attempt& a, const std::string& url, Clock::time_point until);
  void backoff(int round, Clock::time_point until);

  EtcdOptions options_;
  std::atomic<std::size_t> current_{0};  // the endpoint that answered last
};

// The member that answered this thread's last request (for errors about its reply), and
// `what` followed by " from <that member>".
std::string answered_by();
std::string from_member(std::string_view what);

// Fields of an etcd reply. 64-bit integers come as strings; an absent field is 0 or "" (the
// gateway leaves out default values). A field of the wrong type is Corruption naming the
// field, the member that sent it and `what`.
std::int64_t int_field(const nlohmann::json& object, const char* name, std::string_view what = {});
std::string string_field(const nlohmann::json& object, const char* name, std::string_view what = {});
bool bool_field(const nlohmann::json& object, const char* name, std::string_view what = {});

// One bounded round of a watch on every key under `prefix` from the revision after `after`:
// returns at the first change, when etcd cancels the watch (its start was compacted), or at
// min(`until`, now + watch_round) (a watch on a member that froze would hear nothing).
// Either way the caller reads again.
void watch_prefix_once(Http& http, const std::string& prefix, std::int64_t after, Clock::time_point until);

}  // namespace trib::cluster::etcd
