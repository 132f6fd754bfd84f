// Allgather: every rank ends with every rank's tensor, concatenated along the first
// dimension in rank order (a scalar counts as one row). Ring algorithm, pipelined in
// segments: N-1 steps, each rank receives every other rank's rows once.
#pragma once

#include <chrono>

#include "trib/collectives/group.h"
#include "trib/core/tensor.h"

namespace trib::collectives {

struct AllgatherOptions {
  // False: ranks may pass different numbers of rows (allgatherv; the trailing dimensions
  // must still agree), at the cost of a size exchange first.
  bool same_shape = true;
  std::chrono::milliseconds timeout{0};  // 0: GroupOptions::op_timeout
};

// Returns a new tensor [sum of rows, trailing dims...] (for scalars: [size]).
Tensor allgather(Group& group, const Tensor& input, const AllgatherOptions& options = {});

}  // namespace trib::collectives
