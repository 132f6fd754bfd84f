// Dense: a fully connected layer, x·w + b, over [N, features].
#pragma once

#include <cstdint>

#include "trib/nn/layer.h"

namespace trib::nn {

struct DenseOptions {
  std::int64_t units = 0;
  Activation activation = Activation::none;
  Initializer kernel_init = Initializer::glorot_uniform();
  Initializer bias_init = Initializer::zeros();
  bool use_bias = true;
  float l2 = 0.0f;
};

class Dense : public Layer {
 public:
  explicit Dense(DenseOptions o, std::string name = "") : Layer(std::move(name)), o_(o) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "dense"; }

 private:
  DenseOptions o_;
};

}  // namespace trib::nn
