#include "trib/nn/activation_layer.h"

#include "trib/engine/ops.h"

namespace trib::nn {

Value ActivationLayer::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  return apply_activation(mb.graph(), x, a_);
}

}  // namespace trib::nn
