// Broadcast: every rank ends with the root's tensor, in place. A pipelined chain from the
// root (root -> root+1 -> ... around the ring), each segment forwarded as soon as it
// arrives, so the root sends the tensor once whatever the group's size.
#pragma once

#include <chrono>

#include "trib/collectives/group.h"
#include "trib/core/tensor.h"

namespace trib::collectives {

struct BroadcastOptions {
  int root = 0;
  std::chrono::milliseconds timeout{0};  // 0: GroupOptions::op_timeout
};

// Every rank passes a tensor of the same dtype and shape (checked before data moves).
void broadcast(Group& group, const Tensor& tensor, const BroadcastOptions& options = {});

}  // namespace trib::collectives
