// Adam (Kingma & Ba) with bias correction, as PyTorch defines it:
//   t += 1;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
//   p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
// Adam adds weight_decay * p to g (L2); AdamW instead first decays p *= 1 - lr*weight_decay.
// Slots: "m", "v" (the variable's shape) and "step" (i64 scalar).
#pragma once

#include "trib/optim/optimizer.h"

namespace trib {

struct AdamOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});
  std::string_view name() const override { return "adam"; }

 protected:
  // Whether weight decay is decoupled from the gradient (AdamW) rather than L2 (Adam).
  Adam(AdamOptions options, bool decoupled_decay);
  void update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
              const float* grad, std::int64_t len, SlotStore& slots, float lr) const override;

 private:
  AdamOptions options_;
  bool decoupled_decay_;
};

}  // namespace trib
