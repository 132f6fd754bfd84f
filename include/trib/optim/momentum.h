// SGD with momentum, optionally Nesterov's, as PyTorch defines it (no dampening):
//   buf = momentum * buf + g
//   p  -= lr * (nesterov ? g + momentum * buf : buf)
// Slot: "momentum" (the variable's shape).
#pragma once

#include "trib/optim/optimizer.h"

namespace trib {

struct MomentumOptions {
  float momentum = 0.9f;
  bool nesterov = false;
  float weight_decay = 0.0f;  // L2, added to the gradient
};

class Momentum final : public Optimizer {
 public:
  explicit Momentum(MomentumOptions options = {});
  std::string_view name() const override { return "momentum"; }

 protected:
  void update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
              const float* grad, std::int64_t len, SlotStore& slots, float lr) const override;

 private:
  MomentumOptions options_;
};

}  // namespace trib
