// MaxPool2D: max pooling over NCHW images, no padding.
#pragma once

#include "trib/nn/layer.h"

namespace trib::nn {

class MaxPool2D : public Layer {
 public:
  explicit MaxPool2D(int size = 2, int stride = 0, std::string name = "")
      : Layer(std::move(name)), size_(size), stride_(stride ? stride : size) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "max_pool2d"; }

 private:
  int size_, stride_;
};

}  // namespace trib::nn
