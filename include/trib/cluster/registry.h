// Who is in a job, and in which generation. Every change (a member entered, left, or was
// dropped for silence) starts a new generation, and everyone reads the same numbers, so a
// message can carry its sender's generation and be judged by it.
//
// Two implementations: MemoryRegistry (memory_registry.h), hosted by the coordinator, and
// EtcdRegistry (etcd_registry.h), kept in an etcd cluster for jobs that must outlive any
// one machine. The coordinator programs against this interface only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "trib/cluster/store.h"

namespace trib::cluster {

struct Roster {
  std::int64_t generation = 0;  // 0: nobody has entered yet; increases with every change
  std::map<std::string, std::string> members;  // name ("worker/1") -> what it published (its address)
};

// One member's place in the registry. Destroying it leaves at once.
class Registration {
 public:
  virtual ~Registration() = default;
  // False once the registry dropped this member: it was silent past its TTL, or evicted.
  // Such a member must enter again, as a new member of a new generation.
  virtual bool alive() const = 0;
};

class Registry {
 public:
  virtual ~Registry() = default;

  // Enters `name` with `value`. The registration keeps itself alive while it exists; if its
  // process stops (killed, frozen, cut off) for longer than `ttl`, the member is dropped.
  // Throws InvalidArgument if `name` is already present.
  virtual std::unique_ptr<Registration> enter(const std::string& name, const std::string& value, Millis ttl) = 0;
  // Drops `name` whatever its TTL says (the coordinator's verdict on a silent peer); its
  // registration then reports !alive(). A name not present is ignored.
  virtual void evict(const std::string& name) = 0;

  virtual Roster roster() = 0;
  // Blocks until the generation exceeds `seen`, or until `until`; returns the roster then.
  virtual Roster wait_for_change(std::int64_t seen, std::chrono::steady_clock::time_point until) = 0;

  // Values that must outlive the coordinator's machine (its journal): a registry elsewhere
  // (etcd) keeps them beside the membership; one in the coordinator's memory does not (the
  // journal's file in the run directory is all there is then), so keep() does nothing and
  // kept() finds nothing. Whether a call may block on the network: durable().
  virtual bool durable() const { return false; }
  virtual void keep(const std::string& /*key*/, const std::string& /*value*/) {}
  virtual std::optional<std::string> kept(const std::string& /*key*/) { return std::nullopt; }
};

}  // namespace trib::cluster
