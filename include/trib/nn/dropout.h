// Dropout: zeroes a fraction of the inputs while training.
#pragma once

#include "trib/nn/layer.h"

namespace trib::nn {

class Dropout : public Layer {
 public:
  explicit Dropout(float rate, std::string name = "");
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "dropout"; }

 private:
  float rate_;
};

}  // namespace trib::nn
