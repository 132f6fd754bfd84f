// One parameter's gradient as a step produces it: dense values, or the rows an embedding
// lookup touched with their row indices. What every update strategy consumes.
#pragma once

#include "trib/core/tensor.h"

namespace trib::update {

struct GradTensor {
  Tensor values;
  Tensor indices;  // undefined when dense
  bool sparse() const { return indices.defined(); }
};

}  // namespace trib::update
