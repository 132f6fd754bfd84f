#include "trib/nn/conv2d.h"

#include "trib/engine/ops.h"

namespace trib::nn {

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

}  // namespace trib::nn
