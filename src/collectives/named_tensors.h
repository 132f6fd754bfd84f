// Broadcasting a set of named tensors that only the root knows: first a catalogue (names,
// dtypes, shapes) as bytes, then every tensor. The allreduce strategy uses it to give every
// worker the chief's optimizer state, which only the chief restores from a checkpoint.
#pragma once

#include <map>
#include <string>

#include "trib/collectives/group.h"
#include "trib/core/tensor.h"

namespace trib::collectives {

// Afterwards every rank's `bytes` holds the root's.
void broadcast_bytes(Group& group, std::string& bytes, int root = 0);

// Afterwards every rank's `tensors` holds copies of the root's (its own are replaced).
void broadcast_named_tensors(Group& group, std::map<std::string, Tensor>& tensors, int root = 0);

}  // namespace trib::collectives
