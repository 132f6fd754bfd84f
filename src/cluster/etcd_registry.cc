#include "trib/cluster/etcd_registry.h"

#include "cluster/etcd_base64.h"
#include "cluster/etcd_http.h"
#include "cluster/etcd_lease.h"
#include "trib/core/error.h"

namespace trib::cluster {

using etcd::base64_decode;
using etcd::base64_encode;
using etcd::int_field;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

class EtcdRegistration final : public Registration {
 public:
  explicit EtcdRegistration(std::unique_ptr<etcd::Lease> lease) : lease_(std::move(lease)) {}
  // Destroying the lease revokes it, and etcd deletes the member's key with it.
  bool alive() const override { return lease_->alive(); }

 private:
  std::unique_ptr<etcd::Lease> lease_;
};

const json& kvs_of(const json& range) {
  static const json none = json::array();
  return range.contains("kvs") && range["kvs"].is_array() ? range["kvs"] : none;
}

}  // namespace

// The live member keys and the recorded roster, read at one revision.
struct EtcdRegistry::Snapshot {
  std::int64_t revision = 0;
  std::map<std::string, std::string> live;
  std::map<std::string, std::string> recorded;
  std::int64_t recorded_at = 0;  // the roster key's mod revision: the generation
};

EtcdRegistry::EtcdRegistry(EtcdOptions options)
    : http_(std::make_shared<etcd::Http>(std::move(options))),
      prefix_(http_->options().prefix + "registry/"),
      members_(prefix_ + "members/"),
      roster_key_(prefix_ + "roster"),
      kept_(http_->options().prefix + "kept/") {}

EtcdRegistry::~EtcdRegistry() = default;

std::unique_ptr<Registration> EtcdRegistry::enter(const std::string& name, const std::string& value, Millis ttl) {
  TRIB_CHECK(!name.empty(), InvalidArgument, "etcd registry: a member needs a name");
  TRIB_CHECK(ttl.count() > 0, InvalidArgument, "etcd registry: member '{}' needs a positive TTL, got {} ms", name,
             ttl.count());
  const std::string key = members_ + name;
  auto lease = std::make_unique<etcd::Lease>(http_, ttl, fmt::format("member '{}'", key));
  // Only if no one holds the name: a member still within its TTL keeps it.
  json txn = {{"compare", json::array({{{"key", base64_encode(key)},
                                        {"target", "CREATE"},
                                        {"result", "EQUAL"},
                                        {"create_revision", "0"}}})},
              {"success", json::array({{{"request_put",
                                         {{"key", base64_encode(key)},
                                          {"value", base64_encode(value)},
                                          {"lease", std::to_string(lease->id())}}}}})}};
  json r = http_->post("/v3/kv/txn", txn, fmt::format("entering '{}'", key), http_->deadline());
  // A retried txn that had already succeeded finds the key taken, by our own lease.
  bool ours = etcd::bool_field(r, "succeeded");
  if (!ours) {
    json k = http_->post("/v3/kv/range", {{"key", base64_encode(key)}}, fmt::format("reading '{}'", key),
                         http_->deadline());
    ours = !kvs_of(k).empty() && int_field(kvs_of(k)[0], "lease") == lease->id();
  }
  TRIB_CHECK(ours, InvalidArgument, "etcd registry: member '{}' is already registered (key '{}')", name, key);
  lease->keep_alive();
  auto registration = std::make_unique<EtcdRegistration>(std::move(lease));
  reconcile(nullptr);  // record the new generation now rather than at the next reader
  return registration;
}

void EtcdRegistry::evict(const std::string& name) {
  const std::string key = members_ + name;
  json r = http_->post("/v3/kv/range", {{"key", base64_encode(key)}}, fmt::format("reading '{}'", key),
                       http_->deadline());
  if (kvs_of(r).empty()) return;
  // Revoking the lease removes the key, and the member's next renewal learns it is out.
  std::int64_t lease = int_field(kvs_of(r)[0], "lease");
  if (lease != 0) {
    try {
      http_->post("/v3/lease/revoke", {{"ID", std::to_string(lease)}}, fmt::format("evicting '{}'", key),
                  http_->deadline());
    } catch (const NotFound&) {
      // It expired meanwhile.
    }
  } else {
    http_->post("/v3/kv/deleterange", {{"key", base64_encode(key)}}, fmt::format("evicting '{}'", key),
                http_->deadline());
  }
  reconcile(nullptr);
}

EtcdRegistry::Snapshot EtcdRegistry::read(Clock::time_point deadline) {
  json txn = {{"success", json::array({{{"request_range",
                                          {{"key", base64_encode(members_)},
                                           {"range_end", base64_encode(etcd::prefix_end(members_))}}}},
                                        {{"request_range", {{"key", base64_encode(roster_key_)}}}}})}};
  std::string what = fmt::format("reading the roster under '{}'", prefix_);
  json r = http_->post("/v3/kv/txn", txn, what, deadline);
  TRIB_CHECK(r.contains("responses") && r["responses"].is_array() && r["responses"].size() == 2, Corruption,
             "etcd: {}: expected 2 responses, got {}", what, r.value("responses", json::array()).dump().substr(0, 200));
  Snapshot s;
  s.revision = int_field(r["header"], "revision");
  for (const json& kv : kvs_of(r["responses"][0]["response_range"])) {
    std::string key = base64_decode(etcd::string_field(kv, "key", what), etcd::from_member(what));
    TRIB_CHECK(key.starts_with(members_), Corruption, "etcd: {}: key '{}' is outside it", what, key);
    s.live.emplace(key.substr(members_.size()), base64_decode(etcd::string_field(kv, "value", what), etcd::from_member(what)));
  }
  const json& roster = kvs_of(r["responses"][1]["response_range"]);
  if (!roster.empty()) {
    s.recorded_at = int_field(roster[0], "mod_revision");
    json doc = json::parse(base64_decode(etcd::string_field(roster[0], "value", what), etcd::from_member(what)), nullptr, false);
    TRIB_CHECK(doc.is_object(), Corruption, "etcd: roster key '{}' does not hold a JSON object", roster_key_);
    for (auto& [name, value] : doc.items()) {
      TRIB_CHECK(value.is_string(), Corruption, "etcd: roster key '{}': member '{}' is not a string", roster_key_,
                 name);
      s.recorded.emplace(name, value.get<std::string>());
    }
  }
  return s;
}

Roster EtcdRegistry::reconcile(std::int64_t* revision) {
  const auto deadline = http_->deadline();
  for (;;) {
    Snapshot s = read(deadline);
    if (revision) *revision = s.revision;
    if (s.live == s.recorded) return Roster{s.recorded_at, std::move(s.live)};
    // Record what is live, unless someone recorded something since we read.
    json doc(s.live);
    json txn = {{"compare", json::array({{{"key", base64_encode(roster_key_)},
                                          {"target", "MOD"},
                                          {"result", "EQUAL"},
                                          {"mod_revision", std::to_string(s.recorded_at)}}})},
                {"success", json::array({{{"request_put",
                                           {{"key", base64_encode(roster_key_)}, {"value", base64_encode(doc.dump())}}}}})}};
    json r = http_->post("/v3/kv/txn", txn, fmt::format("recording the roster '{}'", roster_key_), deadline);
    if (etcd::bool_field(r, "succeeded")) {
      std::int64_t at = int_field(r["header"], "revision");
      if (revision) *revision = at;
      return Roster{at, std::move(s.live)};
    }
    TRIB_CHECK(Clock::now() < deadline, Timeout, "etcd registry: the roster under '{}' did not settle within {} ms",
               prefix_, http_->options().operation_timeout.count());
  }
}

Roster EtcdRegistry::roster() { return reconcile(nullptr); }

void EtcdRegistry::keep(const std::string& key, const std::string& value) {
  const std::string k = kept_ + key;
  // A put is idempotent: a retry that reaches another member after the first applied is harmless.
  http_->post("/v3/kv/put", {{"key", base64_encode(k)}, {"value", base64_encode(value)}},
              fmt::format("writing '{}'", k), http_->deadline());
}

std::optional<std::string> EtcdRegistry::kept(const std::string& key) {
  const std::string k = kept_ + key;
  const std::string what = fmt::format("reading '{}'", k);
  json r = http_->post("/v3/kv/range", {{"key", base64_encode(k)}}, what, http_->deadline());
  if (kvs_of(r).empty()) return std::nullopt;
  return base64_decode(etcd::string_field(kvs_of(r)[0], "value", what), etcd::from_member(what));
}

Roster EtcdRegistry::wait_for_change(std::int64_t seen, Clock::time_point until) {
  for (;;) {
    std::int64_t revision = 0;
    Roster r = reconcile(&revision);
    if (r.generation > seen || Clock::now() >= until) return r;
    etcd::watch_prefix_once(*http_, prefix_, revision, until);
  }
}

}  // namespace trib::cluster
