// A trial forked from the sweep rather than started as `trib train`: the child begins with
// the sweep's memory, so the job's datasets, decoded once by the sweep, are there without
// reading, inflating and copying Fashion-MNIST again (most of a `trib train` start: 0.8 of
// its 1.1 s of CPU), and the executable is neither loaded nor relocated again. At the end of
// a segment it does not exit but waits for the sweep's decision (trial_control.h): promoted
// at an ASHA rung, it trains on in the same process, from the checkpoint it just wrote (as
// `--resume` would, so a trial paused at its rungs trains exactly as one that never stopped),
// with oneDNN's kernels already generated. It is still a process: a crash, an out-of-memory
// kill or a diverging trial takes only itself down.
//
// Used for jobs that need nothing `trib train` adds around the trainer: no cluster section,
// files for data (no stream, no Python), no monitoring port (sweep_runner.cc decides).
#pragma once

#include <memory>

#include "cluster/child_process.h"
#include "trial.h"
#include "trial_control.h"
#include "trib/train/datasets.h"

namespace trib::sweep {

class ForkedTrial final : public Trial {
 public:
  // `data`: the datasets the trial's job reads, loaded by the sweep; null: the child loads
  // them (a space that sets data keys).
  ForkedTrial(const TrialLaunch& launch, std::shared_ptr<const train::Datasets> data);
  ~ForkedTrial() override;  // as finish(): a paused one is told to end; one still running is killed
  bool poll() override;
  bool paused() const override { return paused_; }
  void go_on(std::int64_t target) override;
  void stop() override { control_->send("stop"); }
  void finish() override;
  double cpu_s() const override { return child_->cpu_s(); }
  bool succeeded() const override { return paused_ || child_->succeeded(); }
  std::string describe_exit() const override { return child_->describe_exit(); }
  const std::string& last_error() const override { return last_error_; }

 private:
  TrialLaunch launch_;
  TrialLog log_;
  std::unique_ptr<ControlChannel> control_;
  std::unique_ptr<cluster::ChildProcess> child_;
  bool paused_ = false;
  std::string last_error_;
};

}  // namespace trib::sweep
