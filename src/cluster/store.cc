#include "trib/cluster/store.h"

#include <charconv>
#include <thread>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cluster/store_protocol.h"
#include "trib/core/error.h"
#include "trib/net/transport.h"

namespace trib::cluster {

using Clock = std::chrono::steady_clock;

std::string Store::get(const std::string& key, Millis timeout) {
  auto until = Clock::now() + timeout;
  for (;;) {
    if (auto v = try_get(key)) return *v;
    TRIB_CHECK(Clock::now() < until, Timeout, "rendezvous: key '{}' did not appear within {} ms", key,
               timeout.count());
    wait_for_change(until);
  }
}

void Store::wait(const std::vector<std::string>& keys, Millis timeout) {
  auto until = Clock::now() + timeout;
  for (;;) {
    std::vector<std::string> missing;
    for (const auto& k : keys)
      if (!try_get(k)) missing.push_back(k);
    if (missing.empty()) return;
    TRIB_CHECK(Clock::now() < until, Timeout, "rendezvous: still waiting after {} ms for {}",
               timeout.count(), fmt::join(missing, ", "));
    wait_for_change(until);
  }
}

void Store::wait_for_change(Clock::time_point until) {
  // Rendezvous is not a hot path: a short poll keeps the protocol stateless.
  std::this_thread::sleep_until(std::min(until, Clock::now() + Millis(20)));
}

void MemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard lock(mu_);
    auto it = values_.find(key);
    std::size_t old = it == values_.end() ? 0 : key.size() + it->second.size();
    std::size_t after = bytes_ - old + key.size() + value.size();
    TRIB_CHECK(after <= capacity_, InvalidArgument,
               "rendezvous store: setting '{}' ({} bytes) would hold {} bytes, more than its {}",
               key.substr(0, 64), value.size(), after, capacity_);
    values_[key] = value;
    bytes_ = after;
  }
  changed_.notify_all();
}

std::optional<std::string> MemoryStore::try_get(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::int64_t MemoryStore::add(const std::string& key, std::int64_t delta) {
  std::int64_t now;
  {
    std::lock_guard lock(mu_);
    auto it = values_.find(key);
    std::int64_t before = 0;
    if (it != values_.end() && !it->second.empty()) {
      auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), before);
      TRIB_CHECK(ec == std::errc() && end == it->second.data() + it->second.size(), InvalidArgument,
                 "rendezvous store: '{}' holds '{}', not a counter", key.substr(0, 64), it->second.substr(0, 64));
    }
    now = before + delta;
    std::string value = std::to_string(now);
    std::size_t old = it == values_.end() ? 0 : key.size() + it->second.size();
    std::size_t after = bytes_ - old + key.size() + value.size();
    TRIB_CHECK(after <= capacity_, InvalidArgument, "rendezvous store: adding to '{}' would pass its {} bytes",
               key.substr(0, 64), capacity_);
    values_[key] = std::move(value);
    bytes_ = after;
  }
  changed_.notify_all();
  return now;
}

std::map<std::string, std::string> MemoryStore::scan(const std::string& prefix) {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  for (auto it = values_.lower_bound(prefix); it != values_.end() && it->first.starts_with(prefix); ++it)
    out.insert(*it);
  return out;
}

void MemoryStore::wait_for_change(Clock::time_point until) {
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, std::min(until, Clock::now() + Millis(100)));
}

namespace {

nlohmann::json call(const RemoteStore::Call& c, std::uint32_t method, const nlohmann::json& body) {
  net::Message m;
  m.method = method;
  m.body = body.dump();
  net::Message reply = c(std::move(m));
  return reply.body.empty() ? nlohmann::json() : nlohmann::json::parse(reply.body);
}

}  // namespace

RemoteStore::RemoteStore(std::shared_ptr<net::Connection> connection)
    : call_([c = std::move(connection)](net::Message m) { return c->call(std::move(m)); }) {}

void RemoteStore::set(const std::string& key, const std::string& value) {
  call(call_, proto::kStoreSet, {{"key", key}, {"value", value}});
}

std::optional<std::string> RemoteStore::try_get(const std::string& key) {
  nlohmann::json r = call(call_, proto::kStoreGet, {{"key", key}});
  if (!r.value("found", false)) return std::nullopt;
  return r["value"].get<std::string>();
}

std::int64_t RemoteStore::add(const std::string& key, std::int64_t delta) {
  return call(call_, proto::kStoreAdd, {{"key", key}, {"delta", delta}})["value"].get<std::int64_t>();
}

}  // namespace trib::cluster
