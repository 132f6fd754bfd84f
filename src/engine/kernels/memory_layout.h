// How a value is stored when it is not plain row-major: a oneDNN memory descriptor, for the
// blocked formats (nChw16c and the like) that convolutions and pooling run fastest on.
// Values in such a layout travel only between kernels that accept them (Op::accepts_layout),
// so a chain conv -> pool -> conv never converts; the executor converts a value to plain for
// every other reader and for fetches. Outside the engine's kernels a layout is opaque.
#pragma once

#include <deque>
#include <memory>
#include <mutex>

#include "engine/kernels/dnnl_util.h"
#include "trib/engine/graph.h"

namespace trib::kernels {

class MemoryLayout {
 public:
  explicit MemoryLayout(dnnl::memory::desc desc) : desc_(std::move(desc)) {}
  const dnnl::memory::desc& desc() const { return desc_; }
  std::size_t bytes() const { return desc_.get_size(); }

 private:
  dnnl::memory::desc desc_;
};

// Whether two values are stored alike (both plain, or equal descriptors).
inline bool same_layout(const MemoryLayout* a, const MemoryLayout* b) {
  return a == b || (a && b && a->desc() == b->desc());
}

// A value's descriptor as a kernel sees it: its layout's, or plain row-major for its spec.
dnnl::memory::desc desc_of(const MemoryLayout* layout, const TensorSpec& spec);

// A shared layout for `desc`, or null when desc is plain row-major for `spec` (kernels then
// write ordinary tensors).
std::shared_ptr<const MemoryLayout> layout_unless_plain(const dnnl::memory::desc& desc,
                                                        const TensorSpec& spec);

// Reorder primitives, built once per (from, to) pair and shared by every kernel of an engine
// context. Thread-safe.
class ReorderCache {
 public:
  const dnnl::reorder& get(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                           const dnnl::engine& engine);

 private:
  struct Entry {
    dnnl::memory::desc from, to;
    dnnl::reorder prim;
  };
  std::mutex mu_;
  std::deque<Entry> entries_;  // a deque: references stay valid as it grows
};

}  // namespace trib::kernels
