// One running trial as the sweep sees it, whichever way it runs: a `trib train` process
// (trial_process.h) or a child forked from the sweep with the data already loaded
// (trial_fork.h). A trial runs a segment, to `target` steps, and then either exits or, when
// it can, waits there for the sweep's decision (ASHA's rung) and goes on in the same process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

class Trial {
 public:
  virtual ~Trial() = default;
  // Copies its output to the log; true once its segment has ended: it exited, or it waits at
  // its target (paused()).
  virtual bool poll() = 0;
  // The segment ended at its target and the process waits for go_on (or ends when dropped).
  virtual bool paused() const = 0;
  // Paused: trains on to `target` steps in the same process.
  virtual void go_on(std::int64_t target) = 0;
  // Asks it to stop at the next step boundary with a checkpoint (time budget, SIGTERM).
  virtual void stop() = 0;
  // Its process is done with: a paused one is told to end, and it is waited for.
  virtual void finish() {}
  // Once finished: the CPU time (user + system) of the process since it started.
  virtual double cpu_s() const = 0;
  // Once exited.
  virtual bool succeeded() const = 0;
  virtual std::string describe_exit() const = 0;
  // The last line that looks like an error ("trib: error: ..."), else the last line.
  virtual const std::string& last_error() const = 0;
};

// A trial's log file: the command line of each segment, then its output line by line,
// remembering the last error line for the table.
class TrialLog {
 public:
  explicit TrialLog(const std::filesystem::path& file);  // appends; IoError if unwritable
  void command(const std::string& line);
  void lines(const std::vector<std::string>& lines);
  // At the end: the last error line, else the last line.
  const std::string& last_error();

 private:
  std::ofstream out_;
  std::string last_line_, last_error_;
};

// The `--set` overrides of one segment: the trial's parameters, its target and the extras.
std::vector<std::string> trial_overrides(const TrialLaunch& launch);

// The `trib train` command line of one segment: resumes when the run directory has a
// checkpoint; otherwise removes what an interrupted start left there.
std::vector<std::string> trial_arguments(const TrialLaunch& launch);

// Whether a run directory holds a published checkpoint (one with a manifest).
bool has_checkpoint(const std::filesystem::path& run_dir);

}  // namespace trib::sweep
