#include "trib/nn/dense.h"

#include "trib/engine/ops.h"

namespace trib::nn {

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

}  // namespace trib::nn
