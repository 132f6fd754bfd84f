// Adagrad (Duchi et al.), as PyTorch defines it without lr decay:
//   sum += g^2;  p -= lr * g / (sqrt(sum) + eps)
// Slot: "sum" (the variable's shape), starting at initial_accumulator.
#pragma once

#include "trib/optim/optimizer.h"

namespace trib {

struct AdagradOptions {
  float eps = 1e-10f;
  float initial_accumulator = 0.0f;
  float weight_decay = 0.0f;  // L2, added to the gradient
};

class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});
  std::string_view name() const override { return "adagrad"; }

 protected:
  void update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
              const float* grad, std::int64_t len, SlotStore& slots, float lr) const override;

 private:
  AdagradOptions options_;
};

}  // namespace trib
