#include "trib/nn/batch_norm.h"

#include "trib/engine/ops.h"

namespace trib::nn {

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

}  // namespace trib::nn
