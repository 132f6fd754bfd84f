// Reverse-mode automatic differentiation: adds gradient nodes to the graph.
#pragma once

#include <span>
#include <vector>

#include "trib/engine/graph.h"
#include "trib/engine/op.h"

namespace trib {

// Gradients of the scalar `loss` with respect to each of `wrt`, added to `graph`. A value
// read by several nodes gets the sum of their contributions. An embedding table's gradient
// stays sparse (rows plus indices) unless a dense contribution also reaches it. A value the
// loss does not depend on gets a zero gradient.
std::vector<Gradient> gradients(Graph& graph, Value loss, std::span<const Value> wrt);

}  // namespace trib
