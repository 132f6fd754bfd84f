#include <yaml-cpp/yaml.h>

#include "trib/pipeline/planner.h"

namespace trib::pipeline {

Plan plan_for_job(const config::JobConfig& job, const std::function<void(const std::string&)>& print) {
  const config::StrategyConfig& s = job.strategy;
  PlanOptions o{s.stages, s.micro_batches, s.schedule, s.memory_mb};
  std::vector<int> manual;
  for (const config::LayerConfig& l : job.model.layers) manual.push_back(l.stage);
  std::vector<LayerCost> costs = calibrate(job);
  Plan plan;
  if (has_manual_stages(manual)) {
    plan = estimate(costs, manual_partition(manual, s.stages), o);
    plan.planned = false;
    for (std::size_t st = 0; st < plan.stages.size(); ++st)
      TRIB_CHECK(s.memory_mb <= 0 || plan.stages[st].mb <= s.memory_mb, InvalidArgument,
                 "strategy.memory_mb {}: stage {} as the layers' stage: values make it needs {:.1f} MB", s.memory_mb, st,
                 plan.stages[st].mb);
  } else {
    // Refined on whole stages, timed as calibrate times layers (one-thread engine: CPU time).
    EngineContext engine(EngineOptions{job.threads.intra, job.threads.inter});
    const LayerCalibration what = layer_calibration(job);
    plan = plan_partition(costs, o, [&](StageRange r, bool) { return calibrate_stage(what, engine, r); });
  }
  if (print) print(plan.table(costs));
  return plan;
}


config::JobConfig pin_partition(const config::JobConfig& job, const Partition& partition) {
  YAML::Node root = YAML::Load(job.resolved_yaml);
  YAML::Node layers = root["model"]["layers"];
  TRIB_CHECK(layers.IsSequence() && static_cast<int>(layers.size()) == partition.layer_count(), InvalidArgument,
             "pipeline partition '{}' does not cover the job's {} layers", partition.to_string(), layers.size());
  for (int s = 0; s < partition.stage_count(); ++s)
    for (int i = partition.stages[static_cast<std::size_t>(s)].begin; i < partition.stages[static_cast<std::size_t>(s)].end; ++i)
      layers[static_cast<std::size_t>(i)]["stage"] = s;
  YAML::Emitter out;
  out << root;
  return config::parse_job_config(std::string(out.c_str()) + "\n", job.source_file);
}

}  // namespace trib::pipeline
