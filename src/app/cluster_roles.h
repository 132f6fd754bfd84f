// The roles of a cluster job, each run by one process: the coordinator, a parameter
// server, a worker. `trib train` with a cluster section runs them all on this machine.
#pragma once

#include <optional>
#include <string>

#include "trib/config/job_config.h"
#include "trib/core/log.h"
#include "trib/core/termination_signal.h"
#include "trib/net/cluster_secret.h"
#include "trib/net/net_options.h"

namespace trib::app {

struct RoleArgs {
  std::string join;         // the coordinator's address
  std::string secret_file;  // empty: --secret-fd, else the TRIB_CLUSTER_SECRET environment variable
  int secret_fd = -1;       // a descriptor to read the secret from (--secret-fd)
  // The secret once read: a role's entry point reads it once (a descriptor can be read only
  // once, and a role makes several transports).
  std::optional<net::ClusterSecret> secret;
  // Where this role's servers listen; empty: the job's cluster.bind_host, else the address
  // of the interface that reaches the coordinator.
  std::string bind_host;
  int timeout_s = 60;       // how long to keep trying to reach the coordinator
  int index = -1;           // the index of its role to ask for; -1: the lowest free one
  // Set by `trib node`: the split it was told to make; a job that disagrees is refused.
  int expected_ps = -1;
  int expected_workers = -1;
  // Set by a local-cluster launcher on a terminal: print progress as machine-readable lines
  // (train/progress_line.h) for it to draw one live line from.
  bool progress_lines = false;
  // SIGTERM, as the command installed it: the job checkpoints and stops (app/cluster_stop.h).
  // Null: SIGTERM keeps its default meaning.
  const TerminationSignal* terminate = nullptr;
};

int run_ps_role(const RoleArgs& args, const Log& log);
int run_worker_role(const RoleArgs& args, const Log& log);

// `trib node`: one process of an srun/mpirun launch. Ranks below `ps` become parameter
// servers, the rest workers; rank and size come from the launcher's environment.
struct NodeArgs {
  RoleArgs role;  // role.join empty: from MASTER_ADDR and MASTER_PORT
  int ps = 0;
  int size = -1;  // the launch's size where the launcher gives none (JOB_COMPLETION_INDEX)
};
int run_node_role(const NodeArgs& args, const Log& log);

// The secret from --secret-fd, --secret-file, or else the launcher's environment variable
// (args.secret once read).
net::ClusterSecret load_secret(const RoleArgs& args);
net::NetOptions net_options(const config::JobConfig& job);

}  // namespace trib::app
