// One stage's training step: its schedule's forward and backward passes over the step's
// micro-batches (schedule.h), activations and gradients through its links (stage_links.h),
// gradients summed over the micro-batches and divided by their count (the whole batch's mean
// gradient, as one process computes it at batch M x b), then its update strategy: a
// LocalUpdate, or with replicas an AllreduceUpdate over the group of this stage's copies.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trib/config/strategy_config.h"
#include "trib/pipeline/schedule.h"
#include "trib/pipeline/stage_links.h"
#include "trib/pipeline/stage_model.h"
#include "trib/update/update_strategy.h"

namespace trib::pipeline {

struct PipelineStageOptions {
  StageModel* model = nullptr;
  StageLinks* links = nullptr;
  std::unique_ptr<update::UpdateStrategy> update;
  config::PipelineSchedule schedule = config::PipelineSchedule::one_f_one_b;
  int stage = 0;
  int stages = 1;
  int micro_batches = 1;
};

struct StepStats {
  double loss = 0;              // last stage: the batch's mean loss
  std::int64_t correct = 0;     // last stage
  std::int64_t examples = 0;
  // Where the step's wall time went (bench=pipeline's breakdown): the passes themselves,
  // summing their gradients, waiting for a neighbour's activation or gradient, handing a
  // tensor to the links, and the update after the flush.
  double compute_s = 0;         // forward and backward passes
  double accumulate_s = 0;      // summing micro-batch gradients
  double wait_s = 0;            // blocked in receive
  double send_s = 0;            // in send (the transport's copy or serialization)
  double update_s = 0;          // the update (and the replicas' allreduce)
  double update_cpu_s = 0;      // the update's CPU time on this thread (a loaded machine does not inflate it)
  double busy_s = 0;            // compute + accumulate + update
  double wall_s = 0;            // the whole step, update included
  std::size_t stash_bytes = 0;  // most stage inputs kept at once for their backward pass
  std::size_t peak_activation_bytes = 0;  // stash plus the largest pass's intermediates
  bool applied = true;
};

class PipelineStage {
 public:
  explicit PipelineStage(PipelineStageOptions options);

  // Brings the variables to where training starts (the update strategy's start()).
  std::int64_t start(VariableStore& vars, const Checkpoint* checkpoint);
  // Step `step` (1-based). On stage 0, `features` and `labels` hold the whole batch (M x b
  // examples); other stages pass undefined tensors and receive theirs. `total_steps` rides
  // along to the other stages.
  StepStats step(std::int64_t step, std::int64_t total_steps, const Tensor& features, const Tensor& labels,
                 VariableStore& vars);
  update::UpdateStrategy& update() { return *o_.update; }
  void finish() { o_.update->finish(); }

 private:
  PipelineStageOptions o_;
  std::vector<Task> tasks_;
};

// Rows [begin, begin + count) of `t` along its first axis, as a tensor of its own.
Tensor slice_rows(const Tensor& t, std::int64_t begin, std::int64_t count);

}  // namespace trib::pipeline
