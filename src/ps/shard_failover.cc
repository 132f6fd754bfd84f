#include "ps/shard_failover.h"

#include <algorithm>

#include "trib/core/error.h"

namespace trib::ps {

namespace {
// Longest a worker tries to reach a backup: its server is up (it is not the lost one).
constexpr std::chrono::milliseconds kDialTimeout{30000};
constexpr int kMaxMoves = 2;
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
  // A shard may move more than once (its acting primary lost in turn, once a relaunched
  // server holds a copy); each failure of this request moves it on at most this often.
  for (int moves = 0;; ++moves) {
    try {
      return (*servers_)[p]->call(m, options);
    } catch (const Unavailable& e) {
      if (!backup_) throw;
      if (moves == kMaxMoves) {
        // Lost again before a relaunched server held the shard's copy: no copy of the shard
        // is left, so the job goes back to its newest checkpoint (PsUpdate::recover).
        if (log_)
          log_(fmt::format("worker {}: parameter server {} lost, and no backup of its shard holds a copy ({}): the shard "
                           "falls back to the automatic restore from the newest checkpoint",
                           worker_, ps, e.what()));
        (*servers_)[p]->close();  // a lost server: the restore reconnects the shard
        throw;
      }
      // Closed first: a fenced primary's connection is still open, and the backup's dial
      // reuses an open connection.
      (*servers_)[p]->close();
      (*servers_)[p] = backup_(ps, kDialTimeout);
      failed_over_[p] = 1;
      if (log_)
        log_(fmt::format("worker {}: parameter server {} lost ({}); its backup takes over, no rollback", worker_, ps,
                         e.what()));
    }
  }
}

int ShardFailover::failovers() const {
  return static_cast<int>(std::count(failed_over_.begin(), failed_over_.end(), 1));
}

}  // namespace trib::ps
