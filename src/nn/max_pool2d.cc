#include "trib/nn/max_pool2d.h"

#include "trib/engine/ops.h"

namespace trib::nn {

Value MaxPool2D::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  return ops::max_pool2d(mb.graph(), x, {size_, size_, stride_, stride_, 0, 0});
}

}  // namespace trib::nn
