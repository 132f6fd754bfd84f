#include "trib/cluster/etcd_store.h"

#include <charconv>
#include <random>
#include <unordered_map>
#include <utility>

#include "cluster/etcd_base64.h"
#include "cluster/etcd_http.h"
#include "trib/core/error.h"

namespace trib::cluster {

using etcd::base64_decode;
using etcd::base64_encode;
using etcd::int_field;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// What a thread has read from a store since its last wait: a wait must watch from just after
// the earliest of those reads (Store::wait reads several keys, then waits), and from this
// thread's reads, not another thread's later ones, or a change in between would be missed.
struct ReadsSinceWait {
  std::int64_t earliest = 0;  // 0: no read since the last wait
};

ReadsSinceWait& reads_since_wait(std::uint64_t store) {
  thread_local std::unordered_map<std::uint64_t, ReadsSinceWait> reads;
  return reads[store];
}

std::uint64_t random_id() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

std::int64_t parse_counter(const std::string& text, const std::string& key) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  TRIB_CHECK(ec == std::errc() && end == text.data() + text.size(), InvalidArgument,
             "etcd store: key '{}' holds '{}', not an integer to add to", key, text.substr(0, 40));
  return v;
}

}  // namespace

EtcdStore::EtcdStore(EtcdOptions options)
    : http_(std::make_unique<etcd::Http>(std::move(options))),
      kv_prefix_(http_->options().prefix + "kv/"),
      id_(random_id()) {
  receipt_key_ = fmt::format("{}receipts/{:016x}", http_->options().prefix, id_);
}

EtcdStore::~EtcdStore() {
  // The receipt only matters while an add is in doubt; a failure here leaves one small key.
  if (adds_ == 0) return;
  try {
    http_->post("/v3/kv/deleterange", {{"key", base64_encode(receipt_key_)}}, "removing this store's receipt",
                Clock::now() + std::chrono::milliseconds(1000));
  } catch (const Error&) {
  }
}

void EtcdStore::saw_revision(std::int64_t revision) {
  std::int64_t& r = reads_since_wait(id_).earliest;
  r = r == 0 ? revision : std::min(r, revision);
}

void EtcdStore::set(const std::string& key, const std::string& value) {
  json r = http_->post("/v3/kv/put", {{"key", base64_encode(full(key))}, {"value", base64_encode(value)}},
                       fmt::format("put '{}'", full(key)), http_->deadline());
  saw_revision(int_field(r["header"], "revision"));
}

std::optional<std::string> EtcdStore::try_get(const std::string& key) {
  std::string what = fmt::format("get '{}'", full(key));
  json r = http_->post("/v3/kv/range", {{"key", base64_encode(full(key))}}, what, http_->deadline());
  saw_revision(int_field(r["header"], "revision"));
  if (!r.contains("kvs") || !r["kvs"].is_array() || r["kvs"].empty()) return std::nullopt;
  const json& kv = r["kvs"][0];
  return base64_decode(etcd::string_field(kv, "value", what), etcd::from_member(what));
}

std::int64_t EtcdStore::add(const std::string& key, std::int64_t delta) {
  const std::string k = full(key);
  const std::string what = fmt::format("add to '{}'", k);
  // One receipt per store: an add in doubt must not find another thread's receipt there.
  std::lock_guard lock(add_mu_);
  const std::int64_t seq = ++adds_;
  const auto deadline = http_->deadline();
  for (;;) {
    json r = http_->post("/v3/kv/range", {{"key", base64_encode(k)}}, what, deadline);
    std::int64_t now = 0, mod = 0;
    if (r.contains("kvs") && r["kvs"].is_array() && !r["kvs"].empty()) {
      now = parse_counter(base64_decode(etcd::string_field(r["kvs"][0], "value", what), etcd::from_member(what)), k);
      mod = int_field(r["kvs"][0], "mod_revision");
    }
    std::int64_t next = 0;
    TRIB_CHECK(!__builtin_add_overflow(now, delta, &next), InvalidArgument,
               "etcd store: adding {} to key '{}' ({}) overflows", delta, k, now);
    std::string receipt = fmt::format("{} {}", seq, next);
    json txn = {
        {"compare", json::array({{{"key", base64_encode(k)},
                                  {"target", "MOD"},
                                  {"result", "EQUAL"},
                                  {"mod_revision", std::to_string(mod)}}})},
        {"success", json::array({{{"request_put", {{"key", base64_encode(k)}, {"value", base64_encode(std::to_string(next))}}}},
                                 {{"request_put", {{"key", base64_encode(receipt_key_)}, {"value", base64_encode(receipt)}}}}})},
        {"failure", json::array({{{"request_range", {{"key", base64_encode(receipt_key_)}}}}})}};
    json t = http_->post("/v3/kv/txn", txn, what, deadline);
    saw_revision(int_field(t["header"], "revision"));
    if (etcd::bool_field(t, "succeeded")) return next;
    // Lost the race, or won it in an attempt whose reply was lost: the receipt tells which.
    if (t.contains("responses") && t["responses"].is_array() && !t["responses"].empty()) {
      const json& rr = t["responses"][0]["response_range"];
      if (rr.contains("kvs") && rr["kvs"].is_array() && !rr["kvs"].empty()) {
        std::string mine = base64_decode(etcd::string_field(rr["kvs"][0], "value", what), etcd::from_member(what));
        auto space = mine.find(' ');
        if (space != std::string::npos && mine.substr(0, space) == std::to_string(seq))
          return parse_counter(mine.substr(space + 1), receipt_key_);
      }
    }
    TRIB_CHECK(Clock::now() < deadline, Timeout, "etcd store: add to '{}' kept losing the race for {} ms", k,
               http_->options().operation_timeout.count());
  }
}

std::map<std::string, std::string> EtcdStore::scan(const std::string& prefix) {
  std::string p = full(prefix);
  std::string what = fmt::format("scan '{}'", p);
  json r = http_->post("/v3/kv/range",
                       {{"key", base64_encode(p)}, {"range_end", base64_encode(etcd::prefix_end(p))}}, what,
                       http_->deadline());
  saw_revision(int_field(r["header"], "revision"));
  std::map<std::string, std::string> out;
  if (!r.contains("kvs") || !r["kvs"].is_array()) return out;
  for (const json& kv : r["kvs"]) {
    std::string key = base64_decode(etcd::string_field(kv, "key", what), etcd::from_member(what));
    TRIB_CHECK(key.starts_with(kv_prefix_), Corruption, "etcd store: scan '{}' returned key '{}' outside it", p, key);
    out.emplace(key.substr(kv_prefix_.size()), base64_decode(etcd::string_field(kv, "value", what), etcd::from_member(what)));
  }
  return out;
}

void EtcdStore::erase(const std::string& key) {
  json r = http_->post("/v3/kv/deleterange", {{"key", base64_encode(full(key))}},
                       fmt::format("delete '{}'", full(key)), http_->deadline());
  saw_revision(int_field(r["header"], "revision"));
}

void EtcdStore::wait_for_change(Clock::time_point until) {
  std::int64_t from = std::exchange(reads_since_wait(id_).earliest, 0);
  if (from == 0) {  // nothing read since the last wait: changes from now on
    json r = http_->post("/v3/kv/range", {{"key", base64_encode(kv_prefix_)}, {"count_only", true}},
                         "reading the current revision", http_->deadline());
    from = int_field(r["header"], "revision");
  }
  etcd::watch_prefix_once(*http_, kv_prefix_, from, until);
}

}  // namespace trib::cluster
