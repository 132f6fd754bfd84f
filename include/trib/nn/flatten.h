// Flatten: [N, ...] to [N, features].
#pragma once

#include "trib/nn/layer.h"

namespace trib::nn {

class Flatten : public Layer {
 public:
  explicit Flatten(std::string name = "") : Layer(std::move(name)) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "flatten"; }
};

}  // namespace trib::nn
