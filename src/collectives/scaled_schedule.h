// A schedule times a constant: how the allreduce strategy applies the linear scaling rule
// again when its group changes size (lr * now / scaled_for), without knowing which schedule
// the job runs.
#pragma once

#include <memory>

#include "trib/optim/schedule.h"

namespace trib::collectives {

class ScaledSchedule final : public Schedule {
 public:
  ScaledSchedule(std::shared_ptr<const Schedule> base, double factor) : base_(std::move(base)), factor_(factor) {}
  float lr(std::int64_t step) const override { return static_cast<float>(factor_ * base_->lr(step)); }

 private:
  std::shared_ptr<const Schedule> base_;
  double factor_;
};

}  // namespace trib::collectives
