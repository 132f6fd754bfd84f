// The one place that builds a job's update strategy (strategy.name: local, ps, allreduce)
// and the parameter-server side of it. The cluster runtime gathers the connections (servers,
// an allreduce group) and calls this; nothing else constructs a strategy from a job.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trib/collectives/group.h"
#include "trib/collectives/strategy_allreduce.h"
#include "trib/config/job_config.h"
#include "trib/net/transport.h"
#include "trib/ps/data_cursors.h"
#include "trib/ps/placement.h"
#include "trib/ps/ps_recovery.h"
#include "trib/ps/ps_server.h"
#include "trib/train/distribution.h"
#include "trib/update/update_strategy.h"

namespace trib::strategy {

// What the cluster runtime gathered for one worker.
struct WorkerLinks {
  int worker_index = 0;
  int workers = 1;
  std::vector<std::shared_ptr<net::Connection>> servers;  // ps: one per server, by index
  std::shared_ptr<collectives::Group> group;              // allreduce: every worker's group
  std::int64_t generation = 0;  // ps: the generation this worker joined in (its requests carry it)
  // allreduce: how the group re-forms with the survivors after a lost worker; empty: a lost
  // worker ends the run.
  collectives::Regroup regroup{};
  // allreduce, a worker joining a running job (relaunched): forms its group when the strategy
  // starts, instead of `group`.
  std::function<std::shared_ptr<collectives::Group>()> join{};
  // allreduce: after the last step, the group a relaunched chief joined to end the run
  // (collectives::AllreduceUpdateOptions::await_rejoin); empty: none.
  std::function<std::shared_ptr<collectives::Group>(const collectives::Group&)> await_rejoin{};
  // allreduce, a stream job: after finish(), the group a relaunched chief joined in place of one
  // lost after the run's last exchange (AllreduceUpdateOptions::await_relaunched_chief).
  std::function<std::shared_ptr<collectives::Group>(const collectives::Group&)> await_relaunched_chief{};
  // allreduce: at an epoch boundary, takes in workers joining beyond the starting ones
  // (AllreduceUpdateOptions::admit_joiners).
  std::function<void(collectives::Group&)> admit_joiners{};
  ps::PsRecoveryOptions ps_recovery{};  // ps: surviving a lost server (empty: its loss ends the worker)
  // ps, a stream job whose partitions the job assigns: how the servers' data cursors compare
  // (ps::PsUpdateOptions::cursors); empty: opaque.
  ps::DataCursors ps_cursors{};
  // ps, tests only (app/fault_hooks.h): ps::PsUpdateOptions::on_exchange; empty: none.
  std::function<void(const char* what, int ps, std::int64_t step)> ps_on_exchange{};
};

// The strategy inputs.job.strategy names, over `links`: local (clip and optimizer here), ps
// (PsUpdate over links.servers), allreduce (AllreduceUpdate over links.group). Throws
// InvalidArgument when the links do not fit the strategy.
std::unique_ptr<update::UpdateStrategy> make_update_strategy(const train::UpdateInputs& inputs,
                                                             const WorkerLinks& links);

// The model's trainable variables with their shapes, in gradient order: what servers hold.
std::vector<ps::VariableInfo> trainable_variables(const config::JobConfig& job);
// How the job's variables are spread over its cluster.ps servers (strategy.placement).
ps::Placement make_placement(const config::JobConfig& job, const std::vector<ps::VariableInfo>& variables);
// Parameter server `index`'s settings for this job.
ps::PsServerOptions ps_server_options(const config::JobConfig& job, int index, int workers);

}  // namespace trib::strategy
