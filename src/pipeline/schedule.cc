#include "trib/pipeline/schedule.h"

#include <algorithm>

#include "trib/core/error.h"

namespace trib::pipeline {

std::vector<Task> stage_tasks(config::PipelineSchedule schedule, int stage, int stages, int micro_batches) {
  TRIB_CHECK(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1, InvalidArgument,
             "pipeline schedule: stage {} of {} with {} micro-batches", stage, stages, micro_batches);
  std::vector<Task> tasks;
  if (schedule == config::PipelineSchedule::gpipe) {
    for (int m = 0; m < micro_batches; ++m) tasks.push_back({Pass::forward, m});
    for (int m = 0; m < micro_batches; ++m) tasks.push_back({Pass::backward, m});
    return tasks;
  }
  // 1F1B: the warm-up forwards are what the later stages need before the first backward
  // comes back; the last stage needs none and runs each backward right after its forward.
  const int warmup = std::min(stages - 1 - stage, micro_batches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) tasks.push_back({Pass::forward, next_forward});
  while (next_forward < micro_batches) {
    tasks.push_back({Pass::forward, next_forward++});
    tasks.push_back({Pass::backward, next_backward++});
  }
  while (next_backward < micro_batches) tasks.push_back({Pass::backward, next_backward++});
  return tasks;
}

int max_in_flight(const std::vector<Task>& tasks) {
  int now = 0, most = 0;
  for (const Task& t : tasks) {
    now += t.pass == Pass::forward ? 1 : -1;
    most = std::max(most, now);
  }
  return most;
}

double ideal_bubble(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace trib::pipeline
