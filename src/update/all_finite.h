// The guard every update strategy runs before it changes anything: a step whose gradients
// hold a NaN or an Inf is skipped (and never sent to a peer).
#pragma once

#include <vector>

#include "trib/update/grad_tensor.h"

namespace trib::update {

// Whether every element of every gradient is finite.
bool all_finite(const std::vector<GradTensor>& grads);

}  // namespace trib::update
