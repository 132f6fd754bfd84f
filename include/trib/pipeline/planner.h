// The automatic partition: measure each layer, then cut the layer list into K contiguous
// stages so that the slowest stage is as fast as possible, with every stage's memory under a
// limit. Manual `stage:` on layers overrides it (partition.h). docs/model_parallel.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trib/config/job_config.h"
#include "trib/pipeline/partition.h"

namespace trib::pipeline {

// One layer, measured at the micro-batch size by the calibration pass.
struct LayerCost {
  std::string name;
  double ms = 0;                     // forward + backward (with the forward recomputed), one micro-batch
  std::int64_t parameter_bytes = 0;  // its variables
  std::int64_t optimizer_bytes = 0;  // its optimizer state
  std::int64_t input_bytes = 0;      // its input, one micro-batch (kept until the backward pass)
  std::int64_t output_bytes = 0;     // what crosses a cut after it, one micro-batch
  std::int64_t work_bytes = 0;       // peak intermediates of its backward pass
};

struct StageEstimate {
  StageRange layers;
  double ms = 0;  // per micro-batch
  double mb = 0;  // parameters, their gradients, optimizer state, kept inputs, intermediates
};

struct Plan {
  Partition partition;
  std::vector<StageEstimate> stages;
  std::vector<std::int64_t> cut_bytes;  // per cut (K - 1): activation bytes per micro-batch
  bool planned = true;                  // false: from `stage:` on layers
  // The plan as a table: layers of each stage, est. ms and MB, bytes across each cut.
  std::string table(const std::vector<LayerCost>& costs) const;
};

struct PlanOptions {
  int stages = 2;
  int micro_batches = 4;
  config::PipelineSchedule schedule = config::PipelineSchedule::one_f_one_b;
  double memory_mb = 0;  // 0: no limit
};

// The estimate of a stage's memory, MB: its parameters twice (values and accumulated
// gradients), optimizer state, the inputs kept by the schedule, and the largest pass's
// intermediates.
double stage_memory_mb(const std::vector<LayerCost>& costs, StageRange r, int stage, const PlanOptions& o);

// Minimises the slowest stage's ms under the memory limit (dynamic programming over cut
// points). InvalidArgument when no partition meets the limit, naming the smallest that would.
Plan plan_partition(const std::vector<LayerCost>& costs, const PlanOptions& options);

// The estimates for a given partition (a manual one, to print it the same way).
Plan estimate(const std::vector<LayerCost>& costs, const Partition& partition, const PlanOptions& options);

// Measures every layer of the job's model at micro-batch training.batch / micro_batches
// (calibration.cc): a few timed runs of its backward graph, its variables' and its optimizer
// state's bytes.
std::vector<LayerCost> calibrate(const config::JobConfig& job);

// What the job runs: its `stage:` values if any, else the planner's cut of the calibrated
// layers. Either way checked against strategy.memory_mb and printed with `print`
// (job_plan.cc).
Plan plan_for_job(const config::JobConfig& job, const std::function<void(const std::string&)>& print);

// The job with `stage:` written on every layer as `partition` says: what a launcher that
// planned hands to the stages, so that every process runs the plan it printed.
config::JobConfig pin_partition(const config::JobConfig& job, const Partition& partition);

}  // namespace trib::pipeline
