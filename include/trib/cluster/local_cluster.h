// One command, a whole cluster on this machine: the coordinator runs in the launcher, the
// parameter servers and workers as child processes of the same binary. Their logs are
// merged with a prefix per process, Ctrl-C is forwarded, and if any process fails the
// launcher tears the rest down and exits non-zero, naming the process that failed.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "trib/core/termination_signal.h"
#include "trib/net/net_options.h"

namespace trib::cluster {

struct LocalClusterOptions {
  std::string executable;  // the trib binary the children run
  std::string job_yaml;    // the resolved job
  std::string run_dir;
  bool resume = false;
  int ps = 0;
  int workers = 1;
  net::NetOptions net;
  std::FILE* out = stdout;
  // SIGTERM (preemption), as the command installed it: the job checkpoints at its next step
  // boundary and every process exits 0; whatever is left after `preemption_grace` is killed.
  // Null: SIGTERM stops the cluster at once, as SIGINT does.
  const TerminationSignal* terminate = nullptr;
  std::chrono::milliseconds preemption_grace{25000};
};

// Returns the launcher's exit code: 0 when every worker finished (or stopped for SIGTERM with
// a checkpoint), 1 when a process failed (its name and how it failed are printed) or the job
// outlived the grace period after SIGTERM, 130 when interrupted (SIGINT).
int run_local_cluster(const LocalClusterOptions& options);

// The environment variable through which a launcher hands the cluster secret to its children.
inline constexpr const char* kSecretEnv = "TRIB_CLUSTER_SECRET";

}  // namespace trib::cluster
