// The reference update strategy: clipping and the optimizer, on this process. The
// distributed strategies reuse it for the update itself once gradients are combined
// (allreduce averages, then applies through one of these; PS averaging mode trains with one).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trib/optim/optimizer.h"
#include "trib/optim/schedule.h"
#include "trib/optim/slot_store.h"
#include "trib/update/update_strategy.h"

namespace trib::update {

struct LocalUpdateOptions {
  std::vector<std::string> parameters;  // trainable parameter names, in gradient order
  std::shared_ptr<const Optimizer> optimizer;
  std::shared_ptr<const Schedule> schedule;
  double clip_norm = 0;  // by the global norm of the gradients; 0: no clipping
  // Abort after this many consecutive skipped (non-finite) steps.
  int max_consecutive_skips = 10;
};

class LocalUpdate final : public UpdateStrategy {
 public:
  explicit LocalUpdate(LocalUpdateOptions options);
  // Skips a step with a NaN or Inf gradient (Error after max_consecutive_skips in a row),
  // else clips and runs the optimizer at the schedule's rate for `step`.
  bool apply(std::int64_t step, std::vector<GradTensor>& grads, VariableStore& vars) override;
  float learning_rate(std::int64_t step) const override { return o_.schedule->lr(step); }
  std::map<std::string, Tensor> state() const override { return slots_.to_tensors(); }
  void restore_state(const std::map<std::string, Tensor>& tensors) override;

  const LocalUpdateOptions& options() const { return o_; }

 private:
  LocalUpdateOptions o_;
  SlotStore slots_;
  int consecutive_skips_ = 0;
};

}  // namespace trib::update
