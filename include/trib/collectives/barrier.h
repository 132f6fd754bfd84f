// Barrier: no rank returns before every rank has called it. Dissemination algorithm:
// ceil(log2 N) rounds; in round k a rank hears from the rank 2^k below it.
#pragma once

#include <chrono>

#include "trib/collectives/group.h"

namespace trib::collectives {

struct BarrierOptions {
  std::chrono::milliseconds timeout{0};  // 0: GroupOptions::op_timeout
};

void barrier(Group& group, const BarrierOptions& options = {});

}  // namespace trib::collectives
