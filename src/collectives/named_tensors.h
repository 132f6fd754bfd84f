// Broadcasting a set of named tensors that only the root knows: first a catalogue (names,
// dtypes, shapes) as bytes, then every tensor. The allreduce strategy uses it to give every
// worker the chief's optimizer state, which only the chief restores from a checkpoint; and the
// byte helpers below to share the members' data cursors (AllreduceUpdateOptions::share_cursors).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trib/collectives/group.h"
#include "trib/core/tensor.h"

namespace trib::collectives {

// Afterwards every rank's `bytes` holds the root's.
void broadcast_bytes(Group& group, std::string& bytes, int root = 0);

// Afterwards every rank's `strings` holds the root's.
void broadcast_strings(Group& group, std::vector<std::string>& strings, int root);

// Every rank's `bytes`, in rank order, in one allgather of fixed-size slots: each rank sends its
// length and up to `slot` bytes. When some rank's bytes are longer, every rank grows `slot`
// alike (to the next power of two) and the allgather runs again, so the caller keeps `slot`
// (the same on every rank) for the next call. A length above `max_bytes` fails
// (InvalidArgument naming the rank) before anything is allocated for it.
std::vector<std::string> allgather_bytes(Group& group, const std::string& bytes, std::size_t max_bytes,
                                         std::size_t& slot);

// Afterwards every rank's `tensors` holds copies of the root's (its own are replaced).
void broadcast_named_tensors(Group& group, std::map<std::string, Tensor>& tensors, int root = 0);

}  // namespace trib::collectives
