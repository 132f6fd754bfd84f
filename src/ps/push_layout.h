// Where each of a server's slices lies in a pushed tensor. Every size a push declares (the
// tensor's element count, each sparse slice's rows, each row id) is checked against the
// server's own slices here, before a single value is read: a push can never make the server
// read past the tensor it came with, nor carry more than the placement gives this server.
#pragma once

#include <cstdint>
#include <vector>

#include "ps/ps_wire.h"
#include "trib/ps/placement.h"

namespace trib::ps {

struct PushLayout {
  struct Part {
    bool sparse = false;
    std::int64_t offset = 0;     // first element of this slice's values in the pushed tensor
    std::int64_t rows = 0;       // sparse: rows sent (and ids)
    std::int64_t id_offset = 0;  // sparse: first of its ids in the body's id array
  };
  std::vector<Part> parts;  // one per slice, in slice order
};

struct PushCheck {
  int ps = 0;
  int worker = 0;
  const std::vector<Slice>* slices = nullptr;
  const std::vector<VariableInfo>* variables = nullptr;
  bool dense_only = false;  // sync and averaging add whole buffers: no sparse slices
};

// Every slice dense, as sync sums and init values are.
PushLayout dense_layout(const std::vector<Slice>& slices);

// Throws InvalidArgument naming the server, the worker and what does not fit. Layout of a
// valid push: dense slices' values in slice order, then each sparse slice's rows in the
// order of the sparse table (ascending slice index).
PushLayout check_push(const PushCheck& c, const proto::Body& body, const Tensor& values);

}  // namespace trib::ps
