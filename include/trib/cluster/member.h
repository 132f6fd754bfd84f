// One role's membership in a job: it reaches the coordinator (retrying until the join
// timeout, since roles on several hosts start in any order), is given its index and the job,
// finds the other roles through the store, hears every change of membership (a new
// generation) and when the job is over.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trib/cluster/roster.h"
#include "trib/cluster/store.h"
#include "trib/net/transport.h"

namespace trib::cluster {

struct Membership {
  std::string role;
  int index = 0;
  int ps = 0;
  int workers = 0;      // at the start (cluster.workers)
  int max_workers = 0;  // admitted while the job runs (cluster.max_workers): indices below it
  std::string job_yaml;
  std::string run_dir;
  bool resume = false;
  // The generation this member joined in. Data-plane requests carry it, so a server can
  // refuse those of a replaced (evicted) process of the same index.
  std::int64_t incarnation = 0;
};

class Member {
 public:
  // Throws Unavailable naming the coordinator's address if it cannot be reached within
  // `timeout`, Unauthenticated on a wrong secret, InvalidArgument if the job refuses the role.
  // `index` >= 0 asks for that index of the role (refused if taken or out of range); -1
  // takes the lowest free one.
  Member(std::shared_ptr<net::Transport> transport, const std::string& coordinator, const std::string& role,
         Millis timeout, int index = -1);
  ~Member();

  const Membership& membership() const { return m_; }
  Store& store() { return *store_; }
  const std::string& coordinator_address() const { return address_; }

  // Reports a clean finish; after it, losing the connection is not a failure. Before it,
  // losing the coordinator ends this process (exit code 3): the job cannot go on without it.
  void leave();
  // Waits until the coordinator says the job is over, or its connection is lost (then
  // throws Unavailable naming it), or the timeout passes (returns false).
  bool wait_for_shutdown(Millis timeout);
  bool shutdown_requested() const { return shutdown_; }

  // The newest generation this member has heard of, and its roster.
  std::int64_t generation() const { return generation_.load(); }
  RosterView roster() const;
  // Waits until the generation exceeds `seen` (returns the roster then) or `timeout` passes
  // (returns the roster as it is).
  RosterView wait_for_change(std::int64_t seen, Millis timeout);
  // Calls `on_change` with every newer roster, on the connection's thread (keep it short),
  // and once at once with the current one.
  void subscribe(std::function<void(const RosterView&)> on_change);

 private:
  std::shared_ptr<net::Transport> transport_;
  std::string address_;
  std::shared_ptr<net::Connection> conn_;
  std::unique_ptr<RemoteStore> store_;
  Membership m_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> left_{false};
  bool lost_ = false;
  std::string lost_reason_;
  std::atomic<std::int64_t> generation_{0};
  RosterView roster_;  // under mu_
  std::vector<std::function<void(const RosterView&)>> subscribers_;  // under mu_

  void on_roster(RosterView view);
};

}  // namespace trib::cluster
