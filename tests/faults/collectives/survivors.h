// Test support: the membership of a group of ranks as threads, for the allreduce strategy's
// Regroup. The test marks a rank lost (as the coordinator would, once its connection closed);
// the survivors then form the next generation among themselves, exchanging addresses here
// as worker processes do through the coordinator's store.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "trib/collectives/strategy_allreduce.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives::testing {

class Survivors {
 public:
  explicit Survivors(ThreadGroup& g) : g_(g) {}

  void lose(int original) {
    std::lock_guard lock(mu_);
    lost_.insert(original);
    cv_.notify_all();
  }

  // The Regroup of the rank that was `original` in the first group.
  Regroup regroup(int original) {
    return [this, original](const Group& failed, const std::string&) -> std::shared_ptr<Group> {
      std::unique_lock lock(mu_);
      TRIB_CHECK(cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !lost_.empty(); }), Unavailable,
                 "no rank was lost");
      std::vector<int> alive;
      for (int r = 0; r < g_.size(); ++r)
        if (!lost_.contains(r)) alive.push_back(r);
      const std::uint64_t generation = failed.generation() + 1;
      Endpoint ep = Endpoint::listen(g_.transports[static_cast<std::size_t>(original)], "coll:0");
      addresses_[{generation, original}] = ep.address();
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(10), [&] {
        return std::all_of(alive.begin(), alive.end(), [&](int r) { return addresses_.contains({generation, r}); });
      });
      GroupOptions o = failed.options();
      o.rank = static_cast<int>(std::find(alive.begin(), alive.end(), original) - alive.begin());
      o.size = static_cast<int>(alive.size());
      o.generation = generation;
      o.addresses.clear();
      for (int r : alive) o.addresses.push_back(addresses_.at({generation, r}));
      lock.unlock();
      return Group::form(std::move(ep), o);
    };
  }

 private:
  ThreadGroup& g_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> lost_;
  std::map<std::pair<std::uint64_t, int>, std::string> addresses_;
};

}  // namespace trib::collectives::testing
