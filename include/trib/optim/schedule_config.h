// Building a learning-rate schedule from a small options struct.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trib/optim/schedule.h"

namespace trib {

struct ScheduleConfig {
  // One of schedule_names().
  std::string name = "constant";
  // The rate at step 0, before warm-up and linear scaling. A job file sets it as optimizer.lr
  // (there is no schedule.base_lr key).
  float base_lr = 0.01f;
  std::int64_t step_size = 1;    // "step": multiply by gamma every step_size steps
  float gamma = 0.1f;            // "step", "exponential"
  std::int64_t decay_steps = 1;  // "exponential": gamma per decay_steps steps
  std::int64_t total_steps = 0;  // "cosine": steps from base to min_lr, warm-up excluded
  float min_lr = 0.0f;           // "cosine"
  // Linear warm-up before the schedule (0: none).
  std::int64_t warmup_steps = 0;
  float warmup_start_factor = 0.0f;
  // The linear scaling rule: when set, the base rate becomes base_lr * global_batch / base_batch
  // (both must then be positive; a job fills them in: batch x workers and batch).
  bool linear_scaling = false;
  std::int64_t global_batch = 0;
  std::int64_t base_batch = 0;
};

// The names make_schedule accepts.
std::vector<std::string> schedule_names();

// Throws InvalidArgument naming an unknown schedule and listing the valid names, or naming an
// option out of its range.
std::unique_ptr<Schedule> make_schedule(const ScheduleConfig& config);

}  // namespace trib
