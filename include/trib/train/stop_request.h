// Stopping a run early and cleanly: the loop (training_loop.h) asks its StopRequest at every
// step boundary whether to stop there; if so it finishes as at a normal end, writing the last
// checkpoint, and returns. `--resume` then continues from that step.
//
// What counts as a request is the StopRequest's business, so the policy lives in one place:
// SignalStop (one process) stops at the first boundary after SIGTERM; a cluster's workers use
// one that agrees a step through the coordinator (src/app/cluster_stop.h).
#pragma once

#include <cstdint>
#include <string>

#include "trib/core/termination_signal.h"

namespace trib::train {

class StopRequest {
 public:
  virtual ~StopRequest() = default;
  // Called at every step boundary with the steps applied so far: true stops the run there.
  virtual bool stop_at(std::int64_t step) = 0;
  // Why, for the log line: "SIGTERM (preemption)".
  virtual std::string reason() const = 0;
  // Whether this worker stops alone and the job goes on without it (SIGTERM to a non-chief
  // parameter-server worker): its hooks hand its data to the others instead of ending.
  virtual bool leaves() const { return false; }
  // Whether such a leave waits for the source's next epoch boundary (an allreduce worker in
  // fixed shards: the others reshard there); it keeps stepping until then.
  virtual bool leaves_between_epochs() const { return false; }
};

// A single process: stops at the first step boundary after SIGTERM.
class SignalStop final : public StopRequest {
 public:
  explicit SignalStop(const TerminationSignal& signal) : signal_(signal) {}
  bool stop_at(std::int64_t) override { return signal_.received(); }
  std::string reason() const override { return "SIGTERM (preemption)"; }

 private:
  const TerminationSignal& signal_;
};

}  // namespace trib::train
