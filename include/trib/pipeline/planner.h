// The automatic partition: measure each layer, then cut the layer list into K contiguous
// stages so that the slowest stage is as fast as possible, with every stage's memory under a
// limit. Manual `stage:` on layers overrides it (partition.h). docs/model_parallel.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trib/config/job_config.h"
#include "trib/engine/context.h"
#include "trib/nn/sequential.h"
#include "trib/optim/optimizer.h"
#include "trib/optim/schedule.h"
#include "trib/pipeline/partition.h"

namespace trib::pipeline {

// One layer, measured at the micro-batch size by the calibration pass.
struct LayerCost {
  std::string name;
  // Its work per micro-batch in a stage before the last: its forward pass, its backward pass
  // (which recomputes the forward), and summing its gradient into the step's sum.
  double ms = 0;
  // The part of `ms` that is the separate forward pass: the last stage runs none (its
  // backward graph computes the forward once), so there the layer costs ms - forward_ms.
  // 0 for the model's last layer, which only the last stage runs and is measured as such.
  double forward_ms = 0;
  std::int64_t parameter_bytes = 0;  // its variables
  std::int64_t optimizer_bytes = 0;  // its optimizer state
  std::int64_t input_bytes = 0;      // its input, one micro-batch (kept until the backward pass)
  std::int64_t output_bytes = 0;     // what crosses a cut after it, one micro-batch
  std::int64_t work_bytes = 0;       // peak intermediates of its backward pass
};

struct StageEstimate {
  StageRange layers;
  double ms = 0;  // per micro-batch: its layers' ms, less their forward_ms on the last stage
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

// A whole stage's measured ms per micro-batch (its layers run as one stage, the last one
// without a separate forward pass): calibrate_stage below, or a test's stand-in.
using StageTimer = std::function<double(StageRange range, bool last)>;

// How far the refinement moves each cut point, in layers, either way.
constexpr int kRefineShift = 2;

// The same, refined by timing whole stages: the summed plan's cut points, each moved up to
// kRefineShift layers either way, give the candidate stages; each is timed once by `timer`,
// and the cut is chosen again among them on their measured ms (which the plan then reports).
// A stage's passes are not the sum of its layers' passes measured apart (the layers' weights
// and activations stay in cache between them; each one-layer run pays its own fixed costs),
// and the cut needs stages equal within a few %. The summed plan stays a candidate, so the
// memory limit is met as without a timer; the timer runs O(K * (2 kRefineShift + 1)^2) times.
Plan plan_partition(const std::vector<LayerCost>& costs, const PlanOptions& options, const StageTimer& timer);

// The estimates for a given partition (a manual one, to print it the same way).
Plan estimate(const std::vector<LayerCost>& costs, const Partition& partition, const PlanOptions& options);

// A stage's work per micro-batch under `costs`: the sum of its layers' ms, without their
// separate forward passes on the last stage.
double stage_ms(const std::vector<LayerCost>& costs, StageRange r, bool last);

// What the calibration measures: a model's layers, each alone as a one-layer stage.
struct LayerCalibration {
  std::shared_ptr<nn::Sequential> model;
  Shape input;  // one example's
  std::int64_t classes = 0;
  std::uint64_t seed = 0;
  std::int64_t micro_batch = 1;
  std::shared_ptr<const Optimizer> optimizer;
  std::shared_ptr<const Schedule> schedule;
};

// Measures every layer (calibration.cc): the fastest of a few timed runs of each of its
// passes (a loaded machine only adds to a run's time) and of its gradient sum, its
// variables' and its optimizer state's bytes, its activations' bytes.
std::vector<LayerCost> calibrate(const LayerCalibration& what, const EngineContext& engine);
// The same for a job's model at micro-batch training.batch / micro_batches, on an engine of
// the job's threads.
std::vector<LayerCost> calibrate(const config::JobConfig& job);

// One whole stage, the layers `range` of `what`'s model: its forward pass (none on the last
// stage), its backward pass and its gradient sum, timed together as one run, the fastest of a
// few (in the thread's CPU time on an engine of one thread, as calibrate does). ms per
// micro-batch.
double calibrate_stage(const LayerCalibration& what, const EngineContext& engine, StageRange range);

// What calibrate(job) measures, as a LayerCalibration.
LayerCalibration layer_calibration(const config::JobConfig& job);

// What the job runs: its `stage:` values if any, else the planner's cut of the calibrated
// layers. Either way checked against strategy.memory_mb and printed with `print`
// (job_plan.cc).
Plan plan_for_job(const config::JobConfig& job, const std::function<void(const std::string&)>& print);

// The job with `stage:` written on every layer as `partition` says: what a launcher that
// planned hands to the stages, so that every process runs the plan it printed.
config::JobConfig pin_partition(const config::JobConfig& job, const Partition& partition);

}  // namespace trib::pipeline
