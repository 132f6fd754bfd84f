// A trial segment as `trib train`, a child process, from its run directory's last checkpoint
// (or from scratch) to `target` steps; it exits at the end of every segment. Why a process
// of its own rather than code in the sweep: a trial that crashes, diverges or runs out of
// memory takes only itself down; stopping one is a signal; and a trial whose job has a
// cluster section runs as the local cluster `trib train` makes of it. Trials that need none
// of what `trib train` adds run forked from the sweep instead (trial_fork.h).
#pragma once

#include <csignal>
#include <memory>

#include "cluster/child_process.h"
#include "trial.h"

namespace trib::sweep {

class TrialProcess final : public Trial {
 public:
  explicit TrialProcess(const TrialLaunch& launch);
  bool poll() override;
  bool paused() const override { return false; }
  void go_on(std::int64_t target) override;  // never paused: InvalidArgument
  void stop() override { child_->signal(SIGTERM); }
  double cpu_s() const override { return child_->cpu_s(); }
  bool succeeded() const override { return child_->succeeded(); }
  std::string describe_exit() const override { return child_->describe_exit(); }
  const std::string& last_error() const override { return last_error_; }

 private:
  TrialLog log_;
  std::unique_ptr<cluster::ChildProcess> child_;
  std::string last_error_;
};

}  // namespace trib::sweep
