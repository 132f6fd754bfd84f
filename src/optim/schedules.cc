// The schedules are a few lines each; they share this file as one concept (the rate as a
// function of the step), with the checks that keep each well defined.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "trib/core/error.h"
#include "trib/optim/schedule.h"

namespace trib {

StepSchedule::StepSchedule(float base, std::int64_t step_size, float gamma)
    : base_(base), step_size_(step_size), gamma_(gamma) {
  TRIB_CHECK(step_size > 0, InvalidArgument, "step schedule: step_size = {} must be positive", step_size);
}

float StepSchedule::lr(std::int64_t step) const {
  const std::int64_t decays = step < 0 ? 0 : step / step_size_;
  return static_cast<float>(base_ * std::pow(static_cast<double>(gamma_), static_cast<double>(decays)));
}

ExponentialSchedule::ExponentialSchedule(float base, float gamma, std::int64_t decay_steps)
    : base_(base), gamma_(gamma), decay_steps_(decay_steps) {
  TRIB_CHECK(decay_steps > 0, InvalidArgument, "exponential schedule: decay_steps = {} must be positive",
             decay_steps);
  TRIB_CHECK(gamma > 0, InvalidArgument, "exponential schedule: gamma = {} must be positive", gamma);
}

float ExponentialSchedule::lr(std::int64_t step) const {
  const double exponent = static_cast<double>(std::max<std::int64_t>(step, 0)) / static_cast<double>(decay_steps_);
  return static_cast<float>(base_ * std::pow(static_cast<double>(gamma_), exponent));
}

CosineSchedule::CosineSchedule(float base, std::int64_t total_steps, float min_lr)
    : base_(base), total_steps_(total_steps), min_lr_(min_lr) {
  TRIB_CHECK(total_steps > 0, InvalidArgument, "cosine schedule: total_steps = {} must be positive",
             total_steps);
}

float CosineSchedule::lr(std::int64_t step) const {
  const double progress =
      static_cast<double>(std::clamp<std::int64_t>(step, 0, total_steps_)) / static_cast<double>(total_steps_);
  return static_cast<float>(min_lr_ + (static_cast<double>(base_) - min_lr_) * 0.5 *
                                          (1.0 + std::cos(std::numbers::pi * progress)));
}

WarmupSchedule::WarmupSchedule(std::unique_ptr<Schedule> inner, std::int64_t warmup_steps, float start_factor)
    : inner_(std::move(inner)), warmup_steps_(warmup_steps), start_factor_(start_factor) {
  TRIB_CHECK(inner_ != nullptr, InvalidArgument, "warm-up schedule needs a schedule to warm up to");
  TRIB_CHECK(warmup_steps >= 0, InvalidArgument, "warm-up schedule: warmup_steps = {} must be >= 0",
             warmup_steps);
  TRIB_CHECK(start_factor >= 0 && start_factor <= 1, InvalidArgument,
             "warm-up schedule: start_factor = {} is outside [0, 1]", start_factor);
}

float WarmupSchedule::lr(std::int64_t step) const {
  if (step >= warmup_steps_) return inner_->lr(step - warmup_steps_);
  const double fraction = static_cast<double>(std::max<std::int64_t>(step, 0)) / static_cast<double>(warmup_steps_);
  return static_cast<float>(inner_->lr(0) * (start_factor_ + (1.0 - start_factor_) * fraction));
}

float linear_scaled_lr(float base_lr, std::int64_t global_batch, std::int64_t base_batch) {
  TRIB_CHECK(global_batch > 0 && base_batch > 0, InvalidArgument,
             "linear scaling rule: global_batch = {} and base_batch = {} must be positive", global_batch,
             base_batch);
  return static_cast<float>(static_cast<double>(base_lr) * static_cast<double>(global_batch) /
                            static_cast<double>(base_batch));
}

}  // namespace trib
