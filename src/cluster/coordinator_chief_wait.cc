// The coordinator's wait for a lost chief (CoordinatorOptions::chief_wait): under `trib
// coordinator` nobody relaunches worker 0 but its node's supervisor (systemd, Kubernetes, a
// script), which starts the same `trib worker --index 0 ...` again. Until that process joins,
// the job is not over (the others may finish their steps, but only the chief writes the run's
// last checkpoint and report); past the bound it ends with the resume line.
#include <chrono>

#include "trib/cluster/coordinator.h"
#include "trib/cluster/membership_keys.h"

namespace trib::cluster {

namespace {

long long whole_seconds(Millis m) { return std::chrono::duration_cast<std::chrono::seconds>(m).count(); }

}  // namespace

std::string Coordinator::await_chief_locked(const std::string& address, const std::string& reason) {
  // A chief that failed with an error said so before it went: started again, it would fail the
  // same way, as a local launcher knows from its exit status.
  if (std::string error = store_.try_get(membership_key::kChiefFailed).value_or(""); !error.empty())
    return fmt::format("which failed with an error ({}) that a restart would repeat", error);
  if (chief_losses_ > options_.chief_returns)
    return fmt::format("lost {} times, more than cluster.max_restarts ({}) allows", chief_losses_, options_.chief_returns);
  chief_away_ = ChiefAway{address, reason, std::chrono::steady_clock::now()};
  return "";
}

std::string Coordinator::chief_waited_for_locked() const {
  return fmt::format(
      "the job waits up to {} s (cluster.join_timeout_s) for worker 0, the chief, to come back: its node's supervisor "
      "starts it again with the same command (trib worker --index 0 ...), and it rejoins the running job with its "
      "state; {} other worker(s) go on meanwhile",
      whole_seconds(options_.chief_wait), workers_left_);
}

void Coordinator::chief_back_locked(const std::string& address) {
  if (!chief_away_) return;
  const auto away = std::chrono::duration<double>(std::chrono::steady_clock::now() - chief_away_->since).count();
  chief_away_.reset();
  if (options_.info)
    options_.info(fmt::format("coordinator: worker 0 (the chief) came back from {} after {:.1f} s; it takes the run back",
                              address, away));
}

void Coordinator::expire_chief_locked() {
  if (!chief_away_ || failed_ || std::chrono::steady_clock::now() - chief_away_->since < options_.chief_wait) return;
  failed_ = true;
  failure_ = loss_failure("worker", 0, chief_away_->address, chief_away_->reason,
                          fmt::format("and it did not come back within {} s (cluster.join_timeout_s)",
                                      whole_seconds(options_.chief_wait)));
  chief_away_.reset();
  cv_.notify_all();
}

}  // namespace trib::cluster
