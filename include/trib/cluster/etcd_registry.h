// The registry kept in etcd. Each member's key ("/trib/<job>/registry/members/<name>") is
// held by an etcd lease that its registration keeps alive from a thread, so a member that
// dies or freezes vanishes within its TTL with no one to tell etcd. The generation is etcd's
// revision of the roster key beside the members: whoever reads a roster that differs from
// the live keys records it there, by compare-and-swap, so every reader sees the same
// generations, and a change no one has read yet is recorded by the next reader.
#pragma once

#include <memory>

#include "trib/cluster/etcd_options.h"
#include "trib/cluster/registry.h"

namespace trib::cluster {

namespace etcd {
class Http;
}

class EtcdRegistry final : public Registry {
 public:
  explicit EtcdRegistry(EtcdOptions options);
  ~EtcdRegistry() override;

  // The TTL is rounded up to whole seconds (etcd's unit; etcd may raise it to its minimum).
  std::unique_ptr<Registration> enter(const std::string& name, const std::string& value, Millis ttl) override;
  void evict(const std::string& name) override;
  Roster roster() override;
  Roster wait_for_change(std::int64_t seen, std::chrono::steady_clock::time_point until) override;
  // Under "/trib/<job>/kept/", outside what the registry watches (a journal rewritten at every
  // change must not wake every roster watcher).
  bool durable() const override { return true; }
  void keep(const std::string& key, const std::string& value) override;
  std::optional<std::string> kept(const std::string& key) override;

 private:
  struct Snapshot;
  Snapshot read(std::chrono::steady_clock::time_point deadline);
  Roster reconcile(std::int64_t* revision);

  std::shared_ptr<etcd::Http> http_;  // shared with registrations' keepalive threads
  std::string prefix_;                // "/trib/<job>/registry/": all the registry watches
  std::string members_;               // prefix_ + "members/"
  std::string roster_key_;            // prefix_ + "roster"
  std::string kept_;                  // "/trib/<job>/kept/"
};

}  // namespace trib::cluster
