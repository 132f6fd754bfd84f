// One segment of a trial: `trib train` as a child process, from its run directory's last
// checkpoint (or from scratch) to `target` steps. Why a child process rather than the
// trainer in this process: a slot is then simply a process; a trial that crashes, diverges
// or runs out of memory takes only itself down; stopping one is a signal; and a trial whose
// job has a cluster section runs as the local cluster `trib train` makes of it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cluster/child_process.h"
#include "trib/sweep/search_space.h"

namespace trib::sweep {

struct TrialLaunch {
  std::string executable;          // trib
  std::string job;                 // the base job file
  std::filesystem::path run_dir;   // the trial's run directory
  std::filesystem::path log_file;  // where its output goes (appended)
  Params params;
  std::int64_t target = 0;  // training.steps; 0: the job's own
  std::vector<std::string> extra;  // more overrides: threads, the schedule's length
};

class TrialProcess {
 public:
  explicit TrialProcess(const TrialLaunch& launch);
  // Copies what the child printed to the log; true once it has exited and its output is read.
  bool poll();
  bool succeeded() const { return child_->succeeded(); }
  std::string describe_exit() const { return child_->describe_exit(); }
  // The last line that looks like an error ("trib: error: ..."), else the last line.
  const std::string& last_error() const { return last_error_; }
  void signal(int sig) { child_->signal(sig); }

 private:
  std::unique_ptr<cluster::ChildProcess> child_;
  std::ofstream log_;
  std::string last_line_, last_error_;
};

// The overrides and arguments of one segment (for tests): resumes when the run directory has
// a checkpoint; otherwise removes what an interrupted start left there.
std::vector<std::string> trial_arguments(const TrialLaunch& launch);

// Whether a run directory holds a published checkpoint (one with a manifest).
bool has_checkpoint(const std::filesystem::path& run_dir);

}  // namespace trib::sweep
