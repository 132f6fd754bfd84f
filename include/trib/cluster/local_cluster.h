// One command, a whole cluster on this machine: the coordinator runs in the launcher, the
// parameter servers and workers as child processes of the same binary. Their logs are
// merged with a prefix per process (on a terminal, below them one live progress line for all
// workers), Ctrl-C is forwarded, and if any process fails the launcher tears the rest down
// and exits non-zero, printing that process's error once, named; the others' teardown is not
// printed. A lost worker of a parameter-server job is relaunched instead (one
// line says so each time), up to cluster.max_restarts.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "trib/core/log.h"
#include "trib/core/termination_signal.h"
#include "trib/net/net_options.h"

namespace trib::net {
class NetContext;
}

namespace trib::cluster {

class Coordinator;

struct LocalClusterOptions {
  std::string executable;  // the trib binary the children run
  std::string job_yaml;    // the resolved job
  std::string run_dir;
  bool resume = false;
  int ps = 0;
  int workers = 1;
  int max_workers = 0;  // CoordinatorOptions::max_workers
  // `trib scale` down asks a worker to leave through the store (membership_key::leave_request)
  // instead of sending it SIGTERM (which an allreduce job takes as its preemption).
  bool leave_by_request = false;
  // A lost worker (other than the chief) does not end the job: see CoordinatorOptions. Its
  // process's exit is then no failure either.
  bool workers_may_be_lost = false;
  std::string store;     // cluster.store: where membership lives ("" or etcd://...)
  std::string job_name;  // names the job's keys in that store
  // A worker other than the chief that is killed by a signal is relaunched with its index,
  // up to max_restarts times in all (cluster.max_restarts); it rejoins the running job.
  // Parameter-server jobs only: their servers keep the state a relaunched worker needs.
  bool relaunch_workers = false;
  // The same for a parameter server (also up to max_restarts, counted apart): the
  // coordinator goes on without it meanwhile (CoordinatorOptions::servers_may_be_lost), and
  // the chief restores the job from its newest checkpoint once it is back.
  bool relaunch_servers = false;
  // The same for the chief (worker 0; counted with the other workers): the coordinator goes on
  // without it meanwhile (CoordinatorOptions::chief_may_be_lost), and the new process, told
  // by membership_key::kChiefRelaunched, takes the run directory back from its newest
  // checkpoint: for a parameter-server job on files it then rejoins the running job with the
  // servers' state (nothing rolls back), unless a server was relaunched empty with it: then
  // every server is restored from the checkpoint in a new generation and every worker rewinds
  // (as after a server's loss).
  bool relaunch_chief = false;
  // Said after the line announcing the chief's relaunch: what the new chief does ("" none).
  std::string chief_note;
  // Printed after the failure when a process killed by a signal (lost, not failed with an
  // error) ends the job: why it is not recovered in place.
  std::string loss_note;
  // If set: the process killed by a signal whose loss stopped the job ("ps0", "worker1"), or
  // the worker killed earlier and evicted (the job went on without it) when a failure ends the
  // job after that; untouched otherwise.
  std::string* lost_process = nullptr;
  // A relaunched worker counts as that earlier loss too (an allreduce stream job: its chief
  // fails the last checkpoint when a worker is lost after its last exchange, relaunched or not).
  bool relaunched_counts_as_lost = false;
  // strategy.ps_replicas: a lost server's shard is taken over by its backup, so nothing rolls
  // back; the relaunch line says so.
  bool server_backups = false;
  int max_restarts = 0;
  net::NetOptions net;
  std::FILE* out = stdout;
  // `out` is a terminal: one live progress line for all workers (cluster/progress_board.h).
  bool live = false;
  LogLevel log_level = LogLevel::info;  // the launcher's and, through --log-level, its children's
  // SIGTERM (preemption), as the command installed it: the job checkpoints at its next step
  // boundary and every process exits 0; whatever is left after `preemption_grace` is killed.
  // Null: SIGTERM stops the cluster at once, as SIGINT does.
  const TerminationSignal* terminate = nullptr;
  std::chrono::milliseconds preemption_grace{25000};
  // Called once the coordinator listens, before any process starts: the launcher's
  // monitoring (monitoring.port: its metrics and the dashboard), held until the job ends.
  // It may throw (a port in use), which stops the job before it starts. Empty: none.
  std::function<std::shared_ptr<void>(Coordinator&, const std::shared_ptr<net::NetContext>&)> monitor;
};

// Returns the launcher's exit code: 0 when every worker finished (or stopped for SIGTERM with
// a checkpoint), 1 when a process failed (its name and how it failed are printed) or the job
// outlived the grace period after SIGTERM, 130 when interrupted (SIGINT).
int run_local_cluster(const LocalClusterOptions& options);

// The environment variable through which a launcher hands the cluster secret to its children.
inline constexpr const char* kSecretEnv = "TRIB_CLUSTER_SECRET";

}  // namespace trib::cluster
