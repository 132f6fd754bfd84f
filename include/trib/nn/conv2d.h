// Conv2D: a 2-D convolution over NCHW images.
#pragma once

#include <cstdint>

#include "trib/nn/layer.h"

namespace trib::nn {

struct Conv2DOptions {
  std::int64_t filters = 0;
  int kernel = 3;
  int stride = 1;
  int padding = -1;  // -1: "same" (kernel / 2); otherwise explicit zero padding
  Activation activation = Activation::none;
  Initializer kernel_init = Initializer::he_uniform();
  Initializer bias_init = Initializer::zeros();
  bool use_bias = true;
  float l2 = 0.0f;
};

class Conv2D : public Layer {
 public:
  explicit Conv2D(Conv2DOptions o, std::string name = "") : Layer(std::move(name)), o_(o) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "conv2d"; }

 private:
  Conv2DOptions o_;
};

}  // namespace trib::nn
