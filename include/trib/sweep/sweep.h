// `trib sweep`: runs a sweep's trials as `trib train` child processes, `slots` at once, each in
// its own run directory under the sweep's directory, and keeps sweep.jsonl (what happened,
// enough to resume), a live table, and best.yaml (the best trial's config).
#pragma once

#include <cstdio>
#include <string>

#include "trib/core/termination_signal.h"
#include "trib/sweep/sweep_config.h"

namespace trib::sweep {

struct SweepOptions {
  SweepConfig config;
  std::string output;       // the sweep's directory
  bool resume = false;      // continue the sweep in `output` from its sweep.jsonl
  std::string executable;   // the `trib` binary the trials run
  std::FILE* out = stdout;  // the table and messages
  bool interactive = false; // redraw the table in place (a terminal)
  // SIGTERM (preemption): the running trials are stopped with a checkpoint and left to
  // --resume; no trial starts. Null: not watched.
  const TerminationSignal* terminate = nullptr;
  // Trials forked from the sweep with the job's data loaded once (sweep/trial_fork.h), where
  // the job allows; false: every segment a `trib train` process (a baseline for bench=sweep).
  bool fork_trials = true;
};

struct SweepResult {
  int trials = 0, completed = 0, stopped = 0, failed = 0;
  int best_trial = -1;  // -1: no trial produced a metric
  double best_metric = 0;
  double cpu_s = 0;     // CPU time (user + system) of all trials and of the sweep's own process
  bool interrupted = false;  // stopped for SIGTERM: --resume continues it
};

SweepResult run_sweep(const SweepOptions& options);

// `trib plot SWEEP_DIR`: every trial's metric curve; drawn by gnuplot where it is installed,
// else the data and script are written for later. Returns the exit code.
int plot_sweep(const std::string& sweep_dir, std::FILE* out);

}  // namespace trib::sweep
