// L2 regularisation applied to a gradient: grad += weight_decay * param, the gradient of
// weight_decay/2 * |param|^2. This is coupled decay (it passes through the optimizer's
// adaptive scaling); AdamW's decoupled decay instead shrinks the parameter directly.
#pragma once

#include "trib/core/tensor.h"

namespace trib {

// Throws InvalidArgument if the tensors are not f32 of the same shape.
void add_l2_regularization(Tensor& grad, const Tensor& param, float weight_decay);

}  // namespace trib
