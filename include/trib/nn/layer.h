// A layer adds nodes (and parameters) to a graph. Calling a layer object twice reuses its
// parameters, so layers compose sequentially (Sequential) or as an arbitrary graph (call
// them on any values and combine the results with trib::ops).
#pragma once

#include <memory>
#include <string>

#include "trib/nn/model_builder.h"

namespace trib::nn {

enum class Activation { none, relu, sigmoid, tanh, softmax };
// Parses "none", "linear", "relu", "sigmoid", "tanh", "softmax"; throws naming the text.
Activation parse_activation(const std::string& name);
std::string activation_name(Activation a);
Value apply_activation(Graph& g, Value x, Activation a);

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  virtual Value operator()(ModelBuilder& mb, Value x) = 0;
  // "dense" or "conv2d": the layer kind, used for generated names.
  virtual std::string kind() const = 0;
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_;
};

using LayerPtr = std::shared_ptr<Layer>;

}  // namespace trib::nn
