// Small helpers for calling oneDNN primitives on Tributary tensors.
#pragma once

#include <dnnl.hpp>

#include "trib/core/tensor.h"
#include "trib/engine/context.h"

namespace trib::kernels {

using dnnl_tag = dnnl::memory::format_tag;
using dnnl_dt = dnnl::memory::data_type;

inline dnnl::memory::dims dims_of(const Shape& s) { return {s.dims().begin(), s.dims().end()}; }

// A plain (row-major) descriptor for a tensor of this shape: a, ab, abc, abcd...
inline dnnl::memory::desc plain_desc(const Shape& s, dnnl_dt dt = dnnl_dt::f32) {
  static constexpr dnnl_tag tags[] = {dnnl_tag::a, dnnl_tag::a, dnnl_tag::ab, dnnl_tag::abc,
                                      dnnl_tag::abcd, dnnl_tag::abcde, dnnl_tag::abcdef};
  if (s.rank() == 0) return dnnl::memory::desc({1}, dt, dnnl_tag::a);
  return dnnl::memory::desc(dims_of(s), dt, tags[s.rank()]);
}

// Wraps a tensor's buffer (no copy) in a oneDNN memory object.
inline dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& md, const dnnl::engine& eng) {
  return dnnl::memory(md, eng, t.raw_data());
}
inline dnnl::memory wrap(const Tensor& t, const dnnl::engine& eng) {
  return wrap(t, plain_desc(t.shape()), eng);
}

}  // namespace trib::kernels
