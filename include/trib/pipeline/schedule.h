// The order in which one stage runs the forward and backward passes of a step's micro-batches.
//
// GPipe: every forward, then every backward; a stage holds all M micro-batches' activations
// at once. 1F1B (PipeDream-flush): stage s runs K - 1 - s forwards to fill the pipeline, then
// alternates one forward and one backward, then drains; it holds at most K - s micro-batches'
// activations. Both run the same passes on the same micro-batches and accumulate the same
// gradients, so a step's update is the same under either; only memory and timing differ.
#pragma once

#include <vector>

#include "trib/config/strategy_config.h"

namespace trib::pipeline {

enum class Pass { forward, backward };

struct Task {
  Pass pass = Pass::forward;
  int micro = 0;  // micro-batch index, 0..M-1
  bool operator==(const Task&) const = default;
};

// Stage `stage` of `stages`: its tasks for one step of `micro_batches` micro-batches.
std::vector<Task> stage_tasks(config::PipelineSchedule schedule, int stage, int stages, int micro_batches);

// The most micro-batches whose forward has run and backward has not, over `tasks`: how many
// stage inputs the stage keeps at once.
int max_in_flight(const std::vector<Task>& tasks);

// (K - 1) / (M + K - 1): the idle share of a pipeline of equal stages.
double ideal_bubble(int stages, int micro_batches);

}  // namespace trib::pipeline
