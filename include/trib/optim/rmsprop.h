// RMSProp (Hinton), as PyTorch defines it:
//   sq = alpha*sq + (1-alpha)*g^2
//   centered: ga = alpha*ga + (1-alpha)*g;  avg = sqrt(sq - ga^2) + eps;  else avg = sqrt(sq) + eps
//   momentum > 0: buf = momentum*buf + g/avg;  p -= lr*buf;  else p -= lr * g/avg
// Slots: "square_avg", plus "grad_avg" when centered and "momentum" when momentum > 0.
#pragma once

#include "trib/optim/optimizer.h"

namespace trib {

struct RmsPropOptions {
  float alpha = 0.99f;
  float eps = 1e-8f;
  float momentum = 0.0f;
  bool centered = false;
  float weight_decay = 0.0f;  // L2, added to the gradient
};

class RmsProp final : public Optimizer {
 public:
  explicit RmsProp(RmsPropOptions options = {});
  std::string_view name() const override { return "rmsprop"; }

 protected:
  void update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
              const float* grad, std::int64_t len, SlotStore& slots, float lr) const override;

 private:
  RmsPropOptions options_;
};

}  // namespace trib
