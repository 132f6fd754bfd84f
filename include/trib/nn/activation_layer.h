// ActivationLayer: an activation function as a layer of its own.
#pragma once

#include "trib/nn/layer.h"

namespace trib::nn {

class ActivationLayer : public Layer {
 public:
  explicit ActivationLayer(Activation a, std::string name = "") : Layer(std::move(name)), a_(a) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "activation"; }

 private:
  Activation a_;
};

}  // namespace trib::nn
