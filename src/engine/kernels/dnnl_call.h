// One execution of cached oneDNN primitives: a stream, plus the temporary buffers the call
// needs (scratchpads, reordered copies), all taken from the step's memory pool so they count
// in the step's peak and are recycled between steps.
#pragma once

#include <dnnl.hpp>

#include <unordered_map>
#include <vector>

#include "engine/kernels/dnnl_util.h"
#include "engine/kernels/memory_layout.h"

namespace trib::kernels {

// Attributes for every primitive we cache: a user-provided scratchpad. oneDNN's own
// scratchpad would live outside the pool, and a primitive shared by concurrent runs must not
// share one buffer.
dnnl::primitive_attr cached_primitive_attr();

// A primitive beside the descriptor it was built from (which knows its scratchpad size).
template <typename P>
struct Primitive {
  explicit Primitive(typename P::primitive_desc d) : pd(std::move(d)), prim(pd) {}
  typename P::primitive_desc pd;
  P prim;
};

class DnnlCall {
 public:
  DnnlCall(const EngineContext& engine, Allocator& alloc);
  ~DnnlCall();
  DnnlCall(const DnnlCall&) = delete;
  DnnlCall& operator=(const DnnlCall&) = delete;

  const dnnl::engine& engine() const { return engine_; }
  // Memory of layout `md` in a pool buffer that lives as long as this call.
  dnnl::memory temporary(const dnnl::memory::desc& md);
  // Executes `prim` (built with cached_primitive_attr()) with `args` plus its scratchpad.
  void run(const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
           std::unordered_map<int, dnnl::memory> args);
  template <typename P>
  void run(const Primitive<P>& p, std::unordered_map<int, dnnl::memory> args) {
    run(p.prim, p.pd, std::move(args));
  }
  // A tensor's buffer as memory of layout `md` (no copy).
  dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& md) const {
    return dnnl::memory(md, engine_, t.raw_data());
  }

  // `t`, stored as `have`, as memory of layout `want`: t itself when they agree, else a
  // reordered temporary.
  dnnl::memory input(const Tensor& t, const dnnl::memory::desc& have, const dnnl::memory::desc& want);
  // Where a primitive writing layout `chosen` should write `t`, to be stored as `have`: t
  // itself when they agree, else a temporary that finish_output() reorders into t.
  dnnl::memory output(const Tensor& t, const dnnl::memory::desc& have, const dnnl::memory::desc& chosen);
  void finish_output(const dnnl::memory& written, const Tensor& t, const dnnl::memory::desc& have);
  // Copies `from` into `to` (layouts may differ).
  void reorder(const dnnl::memory& from, const dnnl::memory& to);

 private:
  const dnnl::engine& engine_;
  ReorderCache& reorders_;
  Allocator& alloc_;
  dnnl::stream stream_;
  std::vector<Tensor> buffers_;
};

// `t`, stored in `layout`, as a new plain tensor of `spec` from `alloc`.
Tensor to_plain(const EngineContext& engine, Allocator& alloc, const Tensor& t,
                const MemoryLayout& layout, const TensorSpec& spec);

}  // namespace trib::kernels
