#include "trib/nn/layers.h"

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

Value Dense::operator()(ModelBuilder& mb, Value x) {
  Graph& g = mb.graph();
  const Shape& in = g.spec(x).shape;
  TRIB_CHECK(in.rank() == 2, ShapeError,
             "dense layer '{}' needs [batch, features] input, got {} (add a flatten layer before it)",
             name(), in.to_string());
  TRIB_CHECK(o_.units > 0, InvalidArgument, "dense layer '{}' needs units > 0", name());
  // Parameters are named before the scope opens: their names are absolute ("dense_0/w").
  Value w = mb.parameter(name() + "/w", Shape{in[1], o_.units}, o_.kernel_init, o_.l2);
  Value b = o_.use_bias ? mb.parameter(name() + "/b", Shape{o_.units}, o_.bias_init) : Value{};
  NameScope scope(g, name());
  Value y = ops::matmul(g, x, w);
  if (o_.use_bias) y = ops::bias_add(g, y, b);
  return apply_activation(g, y, o_.activation);
}

Value Conv2D::operator()(ModelBuilder& mb, Value x) {
  Graph& g = mb.graph();
  const Shape& in = g.spec(x).shape;
  TRIB_CHECK(in.rank() == 4, ShapeError, "conv2d layer '{}' needs [N, C, H, W] input, got {}",
             name(), in.to_string());
  TRIB_CHECK(o_.filters > 0 && o_.kernel > 0 && o_.stride > 0, InvalidArgument,
             "conv2d layer '{}' needs filters, kernel and stride > 0", name());
  Value w = mb.parameter(name() + "/w", Shape{o_.filters, in[1], o_.kernel, o_.kernel},
                         o_.kernel_init, o_.l2);
  Value b = o_.use_bias ? mb.parameter(name() + "/b", Shape{o_.filters}, o_.bias_init) : Value{};
  NameScope scope(g, name());
  int pad = o_.padding < 0 ? o_.kernel / 2 : o_.padding;
  Value y = ops::conv2d(g, x, w, {o_.stride, o_.stride, pad, pad});
  if (o_.use_bias) y = ops::bias_add(g, y, b);
  return apply_activation(g, y, o_.activation);
}

Value MaxPool2D::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  return ops::max_pool2d(mb.graph(), x, {size_, size_, stride_, stride_, 0, 0});
}

Value AvgPool2D::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  return ops::avg_pool2d(mb.graph(), x, {size_, size_, stride_, stride_, 0, 0});
}

Value Flatten::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  return ops::flatten(mb.graph(), x);
}

Value ActivationLayer::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  return apply_activation(mb.graph(), x, a_);
}

Dropout::Dropout(float rate, std::string name) : Layer(std::move(name)), rate_(rate) {
  TRIB_CHECK(rate >= 0.0f && rate < 1.0f, InvalidArgument,
             "dropout rate {} is out of range: expected 0 <= rate < 1", rate);
}

Value Dropout::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  if (rate_ == 0.0f) return x;
  return ops::dropout(mb.graph(), x, rate_, mb.next_seed());
}

Value BatchNorm::operator()(ModelBuilder& mb, Value x) {
  Graph& g = mb.graph();
  const Shape& in = g.spec(x).shape;
  TRIB_CHECK(in.rank() >= 2, ShapeError, "batch_norm layer '{}' needs [N, C, ...] input, got {}",
             name(), in.to_string());
  Shape c{in[1]};
  Value gamma = mb.parameter(name() + "/gamma", c, Initializer::constant(1.0f));
  Value beta = mb.parameter(name() + "/beta", c, Initializer::zeros());
  Value mean = mb.parameter(name() + "/running_mean", c, Initializer::zeros(), 0.0f, false);
  Value var = mb.parameter(name() + "/running_var", c, Initializer::constant(1.0f), 0.0f, false);
  NameScope scope(g, name());
  ops::BatchNormOutputs out = ops::batch_norm(g, x, gamma, beta, mean, var, epsilon_);
  if (mb.training()) {
    mb.add_state_update({name() + "/running_mean", out.batch_mean, momentum_});
    mb.add_state_update({name() + "/running_var", out.batch_var, momentum_});
  }
  return out.y;
}

Value Embedding::operator()(ModelBuilder& mb, Value ids) {
  Value table = mb.parameter(name() + "/table", Shape{vocabulary_, dim_}, Initializer::glorot_uniform());
  NameScope scope(mb.graph(), name());
  return ops::embedding(mb.graph(), table, ids);
}

}  // namespace trib::nn
