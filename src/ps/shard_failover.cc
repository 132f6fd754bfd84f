#include "ps/shard_failover.h"

#include <algorithm>

#include "trib/core/error.h"

namespace trib::ps {

namespace {
// Longest a worker tries to reach a backup: its server is up (it is not the lost one).
constexpr std::chrono::milliseconds kDialTimeout{30000};
}  // namespace

ShardFailover::ShardFailover(std::vector<std::shared_ptr<net::Connection>>* servers, Dial backup, int worker,
                             std::function<void(const std::string&)> log)
    : servers_(servers),
      backup_(std::move(backup)),
      worker_(worker),
      log_(std::move(log)),
      failed_over_(servers->size(), 0),
      seq_(servers->size(), 0) {}

net::Message ShardFailover::call(int ps, const net::Message& m, const net::RequestOptions& options) {
  const auto p = static_cast<std::size_t>(ps);
  try {
    return (*servers_)[p]->call(m, options);
  } catch (const Unavailable& e) {
    if (!backup_ || failed_over_[p]) throw;
    (*servers_)[p] = backup_(ps, kDialTimeout);
    failed_over_[p] = 1;
    if (log_)
      log_(fmt::format("worker {}: parameter server {} lost ({}); its backup takes over, no rollback", worker_, ps,
                       e.what()));
  }
  return (*servers_)[p]->call(m, options);
}

int ShardFailover::failovers() const {
  return static_cast<int>(std::count(failed_over_.begin(), failed_over_.end(), 1));
}

}  // namespace trib::ps
