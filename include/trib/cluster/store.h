// A small key-value store for rendezvous (after gloo's rendezvous/store.h): roles publish
// their addresses and find each other's; counters hand out indices; waits have deadlines.
// Membership, generations and barriers are built from these four operations.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace trib::net {
class Connection;
struct Message;
}

namespace trib::cluster {

using Millis = std::chrono::milliseconds;

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::optional<std::string> try_get(const std::string& key) = 0;
  // Atomically adds delta to the integer at key (0 when absent) and returns the new value.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;

  // Waits until key exists; throws Timeout naming the key after `timeout`.
  std::string get(const std::string& key, Millis timeout);
  // Waits until every key exists; throws Timeout naming the keys still missing.
  void wait(const std::vector<std::string>& keys, Millis timeout);

 protected:
  // Blocks until something may have changed, or `until`. The default polls.
  virtual void wait_for_change(std::chrono::steady_clock::time_point until);
};

// The store itself, in memory; thread-safe. The coordinator hosts one.
class MemoryStore final : public Store {
 public:
  // All keys and values together stay below this many bytes: members write addresses,
  // counters and stream positions, so a store this full means a member gone wrong, which
  // must not take the coordinator's memory with it.
  static constexpr std::size_t kDefaultCapacityBytes = std::size_t{256} << 20;
  explicit MemoryStore(std::size_t capacity_bytes = kDefaultCapacityBytes) : capacity_(capacity_bytes) {}

  // Throws InvalidArgument, storing nothing, when the value would pass the capacity.
  void set(const std::string& key, const std::string& value) override;
  std::optional<std::string> try_get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  // Keys starting with prefix, with their values (for status views).
  std::map<std::string, std::string> scan(const std::string& prefix);

 protected:
  void wait_for_change(std::chrono::steady_clock::time_point until) override;

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
  std::size_t capacity_;
  std::size_t bytes_ = 0;  // keys and values held
};

// A store reached through a connection to the coordinator.
class RemoteStore final : public Store {
 public:
  // Sends one request and returns its reply.
  using Call = std::function<net::Message(net::Message)>;
  explicit RemoteStore(std::shared_ptr<net::Connection> connection);
  // Through whatever connection `call` uses now (a member's, which is replaced when it
  // reconnects to its coordinator).
  explicit RemoteStore(Call call) : call_(std::move(call)) {}
  void set(const std::string& key, const std::string& value) override;
  std::optional<std::string> try_get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;

 private:
  Call call_;
};

}  // namespace trib::cluster
