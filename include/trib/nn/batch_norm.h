// BatchNorm: batch normalisation over channels (dimension 1), with running statistics.
#pragma once

#include "trib/nn/layer.h"

namespace trib::nn {

class BatchNorm : public Layer {
 public:
  explicit BatchNorm(float momentum = 0.9f, float epsilon = 1e-5f, std::string name = "")
      : Layer(std::move(name)), momentum_(momentum), epsilon_(epsilon) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "batch_norm"; }

 private:
  float momentum_, epsilon_;
};

}  // namespace trib::nn
