// The activation functions that layers share (declared in trib/nn/layer.h).
#include "trib/nn/layer.h"

#include "trib/engine/ops.h"

namespace trib::nn {

Activation parse_activation(const std::string& name) {
  if (name == "none" || name == "linear" || name.empty()) return Activation::none;
  if (name == "relu") return Activation::relu;
  if (name == "sigmoid") return Activation::sigmoid;
  if (name == "tanh") return Activation::tanh;
  if (name == "softmax") return Activation::softmax;
  throw InvalidArgument(fmt::format(
      "unknown activation '{}': expected none, relu, sigmoid, tanh or softmax", name));
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::sigmoid: return "sigmoid";
    case Activation::tanh: return "tanh";
    case Activation::softmax: return "softmax";
  }
  return "?";
}

Value apply_activation(Graph& g, Value x, Activation a) {
  switch (a) {
    case Activation::none: return x;
    case Activation::relu: return ops::relu(g, x);
    case Activation::sigmoid: return ops::sigmoid(g, x);
    case Activation::tanh: return ops::tanh(g, x);
    case Activation::softmax: return ops::softmax(g, x);
  }
  return x;
}

}  // namespace trib::nn
