#include "engine/kernels/memory_layout.h"

namespace trib::kernels {

dnnl::memory::desc desc_of(const MemoryLayout* layout, const TensorSpec& spec) {
  if (layout != nullptr) return layout->desc();
  return plain_desc(spec.shape, spec.dtype == DType::i32 ? dnnl_dt::s32 : dnnl_dt::f32);
}

std::shared_ptr<const MemoryLayout> layout_unless_plain(const dnnl::memory::desc& desc,
                                                        const TensorSpec& spec) {
  if (desc == desc_of(nullptr, spec)) return nullptr;
  return std::make_shared<const MemoryLayout>(desc);
}

const dnnl::reorder& ReorderCache::get(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                                       const dnnl::engine& engine) {
  std::lock_guard lock(mu_);
  for (const Entry& e : entries_)
    if (e.from == from && e.to == to) return e.prim;
  // Reorders need no scratchpad at these sizes; the default attributes keep them simple.
  dnnl::reorder::primitive_desc pd(engine, from, engine, to);
  entries_.push_back(Entry{from, to, dnnl::reorder(pd)});
  return entries_.back().prim;
}

}  // namespace trib::kernels
