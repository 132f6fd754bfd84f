// Moves a tensor between its plain row-major layout (how every Tributary tensor is stored)
// and the layout a primitive chose with format_tag::any (blocked, for convolutions). The
// reorder is built once; when the layouts agree the tensor is used as is, with no copy.
// Every plain<->blocked conversion of an op goes through here, so keeping blocked layouts
// between ops later means changing only this edge.
#pragma once

#include <optional>

#include "engine/kernels/dnnl_call.h"

namespace trib::kernels {

class Relayout {
 public:
  enum class Direction { in, out };  // feeds a primitive's input, or receives its output

  Relayout(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen, Direction dir,
           const dnnl::engine& engine);

  const dnnl::memory::desc& chosen() const { return chosen_; }
  bool copies() const { return reorder_.has_value(); }

  // Direction::in: `t`'s contents in the chosen layout (t itself, or a reordered temporary).
  dnnl::memory input(DnnlCall& call, const Tensor& t) const;
  // Direction::out: where the primitive should write output `t` (t itself, or a temporary
  // that finish_output then reorders into t).
  dnnl::memory output(DnnlCall& call, const Tensor& t) const;
  void finish_output(DnnlCall& call, const dnnl::memory& written, const Tensor& t) const;

 private:
  dnnl::memory::desc plain_, chosen_;
  std::optional<dnnl::reorder::primitive_desc> pd_;
  std::optional<dnnl::reorder> reorder_;
};

}  // namespace trib::kernels
