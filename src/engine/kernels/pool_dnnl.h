// oneDNN max and average pooling (padding excluded from averages) for one pooling node, on
// plain NCHW tensors. Max pooling while training records where each maximum came from in a
// workspace, which the backward primitive reads instead of searching the windows again.
#pragma once

#include <optional>

#include "engine/kernels/dnnl_call.h"
#include "engine/kernels/window_geometry.h"

namespace trib::kernels {

enum class PoolKind { max, avg };

class PoolForwardDnnl {
 public:
  PoolForwardDnnl(const Pool2dGeometry& g, PoolKind kind, bool training, const dnnl::engine& eng);
  // `workspace` must hold workspace_bytes() bytes when that is not 0; otherwise it is unused.
  void run(DnnlCall& call, const Tensor& x, const Tensor& y, const Tensor& workspace) const;
  std::size_t workspace_bytes() const { return prim_.pd.workspace_desc().get_size(); }

 private:
  Primitive<dnnl::pooling_forward> prim_;
};

class PoolBackwardDnnl {
 public:
  PoolBackwardDnnl(const Pool2dGeometry& g, PoolKind kind, const dnnl::engine& eng);
  // `workspace`: what the training forward wrote (max pooling only).
  void run(DnnlCall& call, const Tensor& dy, const Tensor& workspace, const Tensor& dx) const;
  std::size_t workspace_bytes() const { return prim_.pd.workspace_desc().get_size(); }

 private:
  Primitive<dnnl::pooling_backward> prim_;
};

}  // namespace trib::kernels
