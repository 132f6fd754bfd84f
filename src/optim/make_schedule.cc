#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/core/error.h"
#include "trib/optim/schedule_config.h"

namespace trib {

std::vector<std::string> schedule_names() { return {"constant", "step", "exponential", "cosine"}; }

std::unique_ptr<Schedule> make_schedule(const ScheduleConfig& c) {
  const float base = c.linear_scaling ? linear_scaled_lr(c.base_lr, c.global_batch, c.base_batch) : c.base_lr;
  std::unique_ptr<Schedule> s;
  if (c.name == "constant") {
    s = std::make_unique<ConstantSchedule>(base);
  } else if (c.name == "step") {
    s = std::make_unique<StepSchedule>(base, c.step_size, c.gamma);
  } else if (c.name == "exponential") {
    s = std::make_unique<ExponentialSchedule>(base, c.gamma, c.decay_steps);
  } else if (c.name == "cosine") {
    s = std::make_unique<CosineSchedule>(base, c.total_steps, c.min_lr);
  } else {
    throw InvalidArgument(fmt::format("unknown learning-rate schedule '{}': valid names are {}", c.name,
                                      fmt::join(schedule_names(), ", ")));
  }
  if (c.warmup_steps > 0) s = std::make_unique<WarmupSchedule>(std::move(s), c.warmup_steps, c.warmup_start_factor);
  return s;
}

}  // namespace trib
