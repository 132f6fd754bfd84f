// Gradient clipping by global norm (Pascanu et al.): all gradients are scaled by one factor,
// so their direction is kept and only the step length is bounded.
#pragma once

#include <span>

#include "trib/core/tensor.h"

namespace trib {

// The L2 norm of all the f32 tensors taken together (accumulated in double).
double global_norm(std::span<const Tensor> tensors);

// Scales every gradient in place by max_norm / norm when the global norm exceeds max_norm, and
// returns the norm before clipping. A non-finite norm leaves the gradients untouched (scaling
// would turn them all into NaN), so the caller can see it and skip the step.
// Throws InvalidArgument if max_norm is not positive or a gradient is not f32.
double clip_by_global_norm(std::span<Tensor> grads, double max_norm);

}  // namespace trib
