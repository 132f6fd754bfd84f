// A worker's side of a push: one server's share of a step's gradients, packed as
// push_layout.h reads it. Dense slices go whole; an embedding's gradient goes as rows with
// their ids, duplicates summed first (in the order they came, as the server's optimizer
// would), so a push never holds more rows than the server's slice and never exceeds the
// placement's bytes for that server. Sync mode densifies embedding rows: it adds whole
// buffers.
#pragma once

#include <cstddef>
#include <vector>

#include "ps/ps_wire.h"
#include "trib/core/allocator.h"
#include "trib/ps/placement.h"
#include "trib/update/grad_tensor.h"

namespace trib::ps {

struct PushPacking {
  const std::vector<Slice>* slices = nullptr;        // the server's, in placement order
  const std::vector<VariableInfo>* variables = nullptr;
  const std::vector<std::size_t>* gradient = nullptr;  // per slice: its variable's index in grads
  bool densify = false;
  Allocator* allocator = nullptr;  // for the packed values
};

// Fills body.sparse and body.ids; returns the flat f32 values.
Tensor pack_gradients(const PushPacking& p, const std::vector<update::GradTensor>& grads, proto::Body& body);

}  // namespace trib::ps
