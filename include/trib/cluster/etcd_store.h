// The rendezvous store kept in an etcd cluster (`cluster.store: etcd://...`), so that it
// outlives any one machine: the coordinator included. Same operations as MemoryStore; every
// key lives under the job's prefix ("/trib/<job>/kv/"). A member that is down, cut off or
// leaderless is skipped for the next one, within EtcdOptions' deadlines.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "trib/cluster/etcd_options.h"
#include "trib/cluster/store.h"

namespace trib::cluster {

namespace etcd {
class Http;
}

class EtcdStore final : public Store {
 public:
  explicit EtcdStore(EtcdOptions options);
  ~EtcdStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::optional<std::string> try_get(const std::string& key) override;
  // One compare-and-swap transaction on the key's revision, retried while others win the
  // race. Exactly once even when a member fails mid-request: the transaction also writes a
  // receipt of this store's, read back when the outcome is in doubt. Adds through one store
  // take turns (they share the receipt); stores in other threads or processes do not wait.
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  // Keys starting with prefix, with their values (for status views).
  std::map<std::string, std::string> scan(const std::string& prefix);
  void erase(const std::string& key);

 protected:
  // Watches the job's keys from the earliest revision this thread read since its last wait,
  // so a change made after those reads is never missed; returns on the first change, or at
  // `until`.
  void wait_for_change(std::chrono::steady_clock::time_point until) override;

 private:
  std::string full(const std::string& key) const { return kv_prefix_ + key; }
  void saw_revision(std::int64_t revision);

  std::unique_ptr<etcd::Http> http_;
  std::string kv_prefix_;
  std::string receipt_key_;           // this store's receipt of its last add
  std::uint64_t id_;                  // tells apart this store's reads in a thread
  std::mutex add_mu_;
  std::int64_t adds_ = 0;  // under add_mu_
};

}  // namespace trib::cluster
