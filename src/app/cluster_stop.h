// What SIGTERM means to a cluster's workers: the job stops cleanly at a step every worker
// agrees on, with a checkpoint, and every process exits 0. Any role that gets SIGTERM (a
// worker, a parameter server, the launcher) raises it through the coordinator's store
// (cluster/job_stop.h); the chief then picks the step (kStopStepKey) and every worker stops there.
// This is the one place that policy lives. One exception: a worker other than the chief of a
// parameter-server job (`leaves_alone`) takes SIGTERM as its own leave: it stops at its next
// step boundary, its data returns to the others, and the job goes on without it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "trib/cluster/job_stop.h"
#include "trib/cluster/store.h"
#include "trib/core/termination_signal.h"
#include "trib/train/stop_request.h"

namespace trib::app {

using cluster::kStopKey;
using cluster::kStopStepKey;

struct ClusterStopOptions {
  cluster::Store* store = nullptr;
  const TerminationSignal* signal = nullptr;
  int worker_index = 0;
  // Workers that step together (allreduce) must all stop at the same step, or the ones left
  // would wait in a collective for the ones gone: they read the agreed step at every boundary.
  // Others (parameter servers) read it in the background and stop at their next boundary.
  bool lockstep = false;
  // SIGTERM to this worker makes it leave the job alone (a non-chief parameter-server
  // worker: the others go on without it); the job's own stop still applies to it.
  bool leaves_alone = false;
  // A store key whose value, once it is `leave_value` (this worker's incarnation), asks this
  // worker to leave the job alone (trib scale down of an allreduce job); empty: none.
  std::string leave_key;
  std::string leave_value;
  // Such a leave waits for an epoch boundary (train::StopRequest::leaves_between_epochs).
  bool leaves_between_epochs = false;
  std::chrono::milliseconds poll{100};
  // Whether the store answers now; while it does not (the coordinator is away), lockstep
  // workers go on with the step the watcher last read instead of waiting at every boundary.
  std::function<bool()> reachable;
  // Where the polls read (the per-step read of lockstep workers, and the watcher's): a store
  // that fails at once while the coordinator is away (Member::store_if_connected), so a
  // coordinator lost during a read holds no step up. Null: `store` (set so by the constructor).
  cluster::Store* poll_store = nullptr;
};

class ClusterStop final : public train::StopRequest {
 public:
  explicit ClusterStop(ClusterStopOptions options);
  ~ClusterStop() override;

  bool stop_at(std::int64_t step) override;
  std::string reason() const override;
  bool leaves() const override {
    std::lock_guard lock(mu_);
    return leaving_;
  }
  bool leaves_between_epochs() const override { return o_.leaves_between_epochs; }

 private:
  void watch();  // the background thread: raises this process's SIGTERM, reads the others'
  bool chief() const { return o_.worker_index == 0; }

  ClusterStopOptions o_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool closing_ = false;
  std::optional<std::string> asked_by_;   // kStopKey's value once seen
  std::optional<std::int64_t> stop_step_;  // kStopStepKey's, once known
  bool raised_ = false;                    // this process's SIGTERM is in the store
  bool leaving_ = false;                   // leaves_alone: SIGTERM came, it stops alone
  bool leave_asked_ = false;               // leave_key holds leave_value: it stops alone
  std::thread watcher_;
};

}  // namespace trib::app
