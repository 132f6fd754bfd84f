// Plain stochastic gradient descent: p -= lr * (g + weight_decay * p).
#pragma once

#include "trib/optim/optimizer.h"

namespace trib {

struct SgdOptions {
  float weight_decay = 0.0f;  // L2, added to the gradient
};

class Sgd final : public Optimizer {
 public:
  explicit Sgd(SgdOptions options = {});
  std::string_view name() const override { return "sgd"; }

 protected:
  void update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
              const float* grad, std::int64_t len, SlotStore& slots, float lr) const override;

 private:
  SgdOptions options_;
};

}  // namespace trib
