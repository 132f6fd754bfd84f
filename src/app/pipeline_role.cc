#include "app/pipeline_role.h"

#include <thread>

#include "trib/collectives/group.h"
#include "trib/net/host_port.h"
#include "trib/pipeline/stage_trainer.h"

namespace trib::app {

namespace {

// The group of stage `stage`'s copies, one per replica, formed through the store.
std::shared_ptr<collectives::Group> replica_group(const config::JobConfig& job, const PipelineRoleOptions& o, int stage,
                                                  int replica) {
  const int replicas = job.strategy.replicas;
  collectives::Endpoint ep = collectives::Endpoint::listen(o.transport, net::format_host_port(o.bind, 0));
  cluster::Member& m = *o.member;
  m.store().set(fmt::format("pipeline/group/{}/{}", stage, replica), o.published(ep.address()));
  collectives::GroupOptions go;
  go.rank = replica;
  go.size = replicas;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(job.cluster.join_timeout_s);
  for (int r = 0; r < replicas; ++r) {
    const std::string key = fmt::format("pipeline/group/{}/{}", stage, r);
    for (;;) {
      if (std::optional<std::string> a = m.store().try_get(key)) {
        go.addresses.push_back(*a);
        break;
      }
      TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
                 "pipeline stage {}: replica {} did not publish its address within {} s (cluster.join_timeout_s)", stage,
                 r, job.cluster.join_timeout_s);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return collectives::Group::form(std::move(ep), go);
}

}  // namespace

int run_pipeline_stage(const config::JobConfig& job, const PipelineRoleOptions& o) {
  cluster::Member& m = *o.member;
  const cluster::Membership& ms = m.membership();
  const int stages = job.strategy.stages;
  pipeline::StageTrainerOptions so;
  so.job = job;
  so.output = ms.run_dir;
  so.resume = ms.resume;
  so.stage = ms.index % stages;
  so.replica = ms.index / stages;
  so.transport = o.transport;
  so.listen = net::format_host_port(o.bind, 0);
  so.published = o.published;
  so.publish = [&m](const std::string& key, const std::string& value) { m.store().set(key, value); };
  so.lookup = [&m](const std::string& key) { return m.store().try_get(key); };
  // Long enough for the slowest stage's step and for the planner's calibration on stage 0.
  so.timeout = std::chrono::seconds(std::max(60, job.cluster.join_timeout_s));
  if (job.strategy.replicas > 1) so.replica_group = replica_group(job, o, so.stage, so.replica);
  o.log->info("worker {} is pipeline stage {} of {}{}", ms.index, so.stage, stages,
              job.strategy.replicas > 1 ? fmt::format(", replica {} of {}", so.replica, job.strategy.replicas) : "");
  pipeline::train_stage(so);
  return 0;
}

}  // namespace trib::app
