// A `trib worker` of a strategy-pipeline job: worker w runs stage w % stages of replica
// w / stages (pipeline/stage_trainer.h), meeting the other stages through the coordinator's
// store; with replicas, each stage's copies form an allreduce group of their own.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "trib/cluster/member.h"
#include "trib/config/job_config.h"
#include "trib/core/log.h"
#include "trib/net/transport.h"

namespace trib::app {

struct PipelineRoleOptions {
  cluster::Member* member = nullptr;
  std::shared_ptr<net::Transport> transport;
  std::string bind;  // host to listen on (port 0)
  std::function<std::string(const std::string& bound)> published;
  const Log* log = nullptr;
};

int run_pipeline_stage(const config::JobConfig& job, const PipelineRoleOptions& options);

}  // namespace trib::app
