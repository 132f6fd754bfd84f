#include "trib/nn/embedding.h"

#include "trib/engine/ops.h"

namespace trib::nn {

Value Embedding::operator()(ModelBuilder& mb, Value ids) {
  Value table = mb.parameter(name() + "/table", Shape{vocabulary_, dim_}, Initializer::glorot_uniform());
  NameScope scope(mb.graph(), name());
  return ops::embedding(mb.graph(), table, ids);
}

}  // namespace trib::nn
