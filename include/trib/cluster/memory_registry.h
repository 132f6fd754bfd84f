// The registry in one process (the coordinator's): generations count changes from 1. A
// member here is alive while its Registration exists; members in other processes are
// evicted by whoever watches their connections (the coordinator's heartbeat timeout).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "trib/cluster/registry.h"

namespace trib::cluster {

class MemoryRegistry final : public Registry {
 public:
  MemoryRegistry();

  std::unique_ptr<Registration> enter(const std::string& name, const std::string& value, Millis ttl) override;
  void evict(const std::string& name) override;
  Roster roster() override;
  Roster wait_for_change(std::int64_t seen, std::chrono::steady_clock::time_point until) override;
  // Moves the generation up to `generation` (never down): a restarted coordinator carries on
  // from its predecessor's, so generations keep increasing across the restart.
  void advance_to(std::int64_t generation);

  // Shared with the registrations, which may outlive the registry.
  struct State {
    std::mutex mu;
    std::condition_variable changed;
    Roster roster;
    std::map<std::string, std::uint64_t> entries;  // name -> the entry's serial, to tell re-entries apart
    std::uint64_t next_serial = 1;
  };

 private:
  std::shared_ptr<State> state_;
};

}  // namespace trib::cluster
