#include "trib/strategy/make_strategy.h"

#include "trib/collectives/strategy_allreduce.h"
#include "trib/engine/context.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/strategy_ps.h"
#include "trib/train/model_graph.h"

namespace trib::strategy {
namespace {

ps::Mode ps_mode(config::PsMode m) {
  switch (m) {
    case config::PsMode::sync: return ps::Mode::sync;
    case config::PsMode::async: return ps::Mode::async;
    case config::PsMode::bounded: return ps::Mode::bounded;
    case config::PsMode::averaging: return ps::Mode::averaging;
  }
  throw InvalidArgument("unknown strategy.mode");
}

ps::PlacementStrategy placement_strategy(config::PsPlacement p) {
  switch (p) {
    case config::PsPlacement::round_robin: return ps::PlacementStrategy::round_robin;
    case config::PsPlacement::greedy: return ps::PlacementStrategy::greedy;
    case config::PsPlacement::partitioned: return ps::PlacementStrategy::partitioned;
    case config::PsPlacement::balanced: return ps::PlacementStrategy::balanced;
  }
  throw InvalidArgument("unknown strategy.placement");
}

collectives::Compression compression(config::Compression c) {
  switch (c) {
    case config::Compression::none: return collectives::Compression::none;
    case config::Compression::bf16: return collectives::Compression::bf16;
    case config::Compression::fp16: return collectives::Compression::fp16;
  }
  throw InvalidArgument("unknown strategy.compression");
}

std::unique_ptr<update::UpdateStrategy> make_ps_update(const train::UpdateInputs& in, const WorkerLinks& links) {
  const config::JobConfig& job = in.job;
  TRIB_CHECK(!links.servers.empty() && static_cast<int>(links.servers.size()) == job.cluster.ps, InvalidArgument,
             "strategy ps: worker {} has {} server connection(s) but cluster.ps is {}", links.worker_index,
             links.servers.size(), job.cluster.ps);
  std::vector<ps::VariableInfo> variables = trainable_variables(job);
  ps::PsUpdateOptions po;
  po.worker_index = links.worker_index;
  po.generation = links.generation;
  po.workers = links.workers;
  po.mode = ps_mode(job.strategy.mode);
  po.period = job.strategy.period;
  po.placement = make_placement(job, variables);
  po.variables = std::move(variables);
  po.servers = links.servers;
  po.optimizer = in.optimizer;
  po.schedule = in.schedule;
  po.clip_norm = job.training.clip_norm;
  po.recovery = links.ps_recovery;
  po.overlap = job.strategy.ps_overlap;
  po.pull_ahead = job.strategy.ps_pull_ahead;
  po.cursors = links.ps_cursors;
  po.on_exchange = links.ps_on_exchange;
  po.log = [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
  return std::make_unique<ps::PsUpdate>(std::move(po));
}

std::unique_ptr<update::UpdateStrategy> make_allreduce_update(const train::UpdateInputs& in, const WorkerLinks& links) {
  TRIB_CHECK(links.group != nullptr || links.join, InvalidArgument, "strategy allreduce: worker {} has no group",
             links.worker_index);
  collectives::AllreduceUpdateOptions ao;
  ao.group = links.group;
  ao.parameters = in.trainable;
  ao.optimizer = in.optimizer;
  // The schedule as the job runs it: with the linear scaling rule where the job asks for it or
  // leaves it to this strategy's default (config/derived_settings.h).
  ao.schedule = in.schedule;
  ao.bucket_bytes = static_cast<std::size_t>(in.job.strategy.bucket_mb * (1 << 20));
  ao.compression = compression(in.job.strategy.compression);
  ao.clip_norm = in.job.training.clip_norm;
  // After a lost worker: the survivors' group, and the learning rate rescaled by the linear
  // rule for the workers left when the job scales it (schedule.linear_scaling).
  ao.regroup = links.regroup;
  ao.join = links.join;
  ao.await_rejoin = links.await_rejoin;
  ao.await_relaunched_chief = links.await_relaunched_chief;
  ao.admit_joiners = links.admit_joiners;
  ao.linear_scaling = in.job.schedule.linear_scaling;
  ao.scaled_for = links.workers;
  // A stream group that loses a worker goes on from where every member's data stood at the
  // step it rolls back to, the lost one's included (StreamHooks::on_regroup).
  ao.share_cursors = in.job.data.stream() && in.job.data.kafka.share_cursors;
  // Its start() gives every worker the chief's step, variables and optimizer state.
  return std::make_unique<collectives::AllreduceUpdate>(std::move(ao));
}

}  // namespace

std::unique_ptr<update::UpdateStrategy> make_update_strategy(const train::UpdateInputs& inputs,
                                                             const WorkerLinks& links) {
  switch (inputs.job.strategy.name) {
    case config::StrategyName::local: return train::make_local_update(inputs);
    case config::StrategyName::ps: return make_ps_update(inputs, links);
    case config::StrategyName::allreduce: return make_allreduce_update(inputs, links);
    case config::StrategyName::pipeline:
      throw InvalidArgument("strategy pipeline: each stage runs its own loop (include/trib/pipeline/stage_trainer.h)");
  }
  throw InvalidArgument("unknown strategy.name");
}

std::vector<ps::VariableInfo> trainable_variables(const config::JobConfig& job) {
  EngineContext engine(EngineOptions{1, 1});
  train::ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, job.training.seed};
  train::ModelGraph graph(spec, 1, false, engine);
  std::vector<ps::VariableInfo> out;
  for (const nn::Parameter& p : graph.trainable_parameters()) out.push_back({p.name, p.shape});
  return out;
}

ps::Placement make_placement(const config::JobConfig& job, const std::vector<ps::VariableInfo>& variables) {
  return ps::place(variables, job.cluster.ps, placement_strategy(job.strategy.placement), job.strategy.partition_bytes);
}

ps::PsServerOptions ps_server_options(const config::JobConfig& job, int index, int workers) {
  std::vector<ps::VariableInfo> variables = trainable_variables(job);
  ps::Placement placement = make_placement(job, variables);
  return {index,     workers, ps_mode(job.strategy.mode), job.strategy.staleness, job.strategy.backup_workers,
          variables, placement, make_optimizer(job.optimizer)};
}

}  // namespace trib::strategy
