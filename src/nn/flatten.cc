#include "trib/nn/flatten.h"

#include "trib/engine/ops.h"

namespace trib::nn {

Value Flatten::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  return ops::flatten(mb.graph(), x);
}

}  // namespace trib::nn
