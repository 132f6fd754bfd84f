// Learning-rate schedules: pure functions of the global step (0-based), so that a resumed run
// needs only the step from its checkpoint to continue with the same rates.
#pragma once

#include <cstdint>
#include <memory>

namespace trib {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual float lr(std::int64_t step) const = 0;
};

// lr = base.
class ConstantSchedule final : public Schedule {
 public:
  explicit ConstantSchedule(float base) : base_(base) {}
  float lr(std::int64_t) const override { return base_; }

 private:
  float base_;
};

// lr = base * gamma^floor(step / step_size): multiply by gamma every step_size steps.
class StepSchedule final : public Schedule {
 public:
  StepSchedule(float base, std::int64_t step_size, float gamma);
  float lr(std::int64_t step) const override;

 private:
  float base_;
  std::int64_t step_size_;
  float gamma_;
};

// lr = base * gamma^(step / decay_steps), continuously (decay_steps = 1: gamma per step).
class ExponentialSchedule final : public Schedule {
 public:
  ExponentialSchedule(float base, float gamma, std::int64_t decay_steps = 1);
  float lr(std::int64_t step) const override;

 private:
  float base_;
  float gamma_;
  std::int64_t decay_steps_;
};

// lr = min + (base - min) * (1 + cos(pi * step / total_steps)) / 2, and min after total_steps.
class CosineSchedule final : public Schedule {
 public:
  CosineSchedule(float base, std::int64_t total_steps, float min_lr = 0.0f);
  float lr(std::int64_t step) const override;

 private:
  float base_;
  std::int64_t total_steps_;
  float min_lr_;
};

// Linear warm-up in front of another schedule. For step < warmup_steps the rate rises
// linearly from start_factor * inner.lr(0) towards inner.lr(0):
//   lr = inner.lr(0) * (start_factor + (1 - start_factor) * step / warmup_steps)
// and from then on the inner schedule runs, shifted to start at 0: lr = inner.lr(step - warmup).
class WarmupSchedule final : public Schedule {
 public:
  WarmupSchedule(std::unique_ptr<Schedule> inner, std::int64_t warmup_steps, float start_factor = 0.0f);
  float lr(std::int64_t step) const override;

 private:
  std::unique_ptr<Schedule> inner_;
  std::int64_t warmup_steps_;
  float start_factor_;
};

// The linear scaling rule (Goyal et al.): lr = base_lr * global_batch / base_batch.
float linear_scaled_lr(float base_lr, std::int64_t global_batch, std::int64_t base_batch);

}  // namespace trib
