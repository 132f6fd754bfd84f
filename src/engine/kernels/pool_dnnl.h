// oneDNN max and average pooling (padding excluded from averages) for one pooling node, in
// whatever layout its input arrives in (blocked after a convolution, where it runs fastest;
// the output keeps that layout). Max pooling while training records where each maximum came
// from in a workspace, which the backward primitive reads instead of searching the windows
// again; the backward is built from the forward it differentiates, so layouts and the
// workspace's encoding agree.
#pragma once

#include <memory>

#include "engine/kernels/dnnl_call.h"
#include "engine/kernels/window_geometry.h"

namespace trib::kernels {

enum class PoolKind { max, avg };

class PoolForwardDnnl {
 public:
  // x stored as `src` (plain NCHW or a blocked layout).
  PoolForwardDnnl(const Pool2dGeometry& g, PoolKind kind, bool training,
                  const dnnl::memory::desc& src, const dnnl::engine& eng);
  // y in dst_layout(); workspace in workspace_layout() when that is not null.
  void run(DnnlCall& call, const Tensor& x, const Tensor& y, const Tensor& workspace) const;
  const std::shared_ptr<const MemoryLayout>& dst_layout() const { return dst_layout_; }
  // Null when the primitive needs no workspace (average pooling, inference).
  const std::shared_ptr<const MemoryLayout>& workspace_layout() const { return ws_layout_; }
  const dnnl::pooling_forward::primitive_desc& pd() const { return prim_.pd; }

 private:
  Primitive<dnnl::pooling_forward> prim_;
  std::shared_ptr<const MemoryLayout> dst_layout_, ws_layout_;
};

class PoolBackwardDnnl {
 public:
  // `forward`: the training forward this differentiates.
  PoolBackwardDnnl(const Pool2dGeometry& g, PoolKind kind, const PoolForwardDnnl& forward,
                   const dnnl::engine& eng);
  // dy stored as dy_desc (converted when it differs from the forward's output layout);
  // workspace: what the forward wrote (max pooling); dx in diff_src_layout().
  void run(DnnlCall& call, const Tensor& dy, const dnnl::memory::desc& dy_desc,
           const Tensor& workspace, const Tensor& dx) const;
  const std::shared_ptr<const MemoryLayout>& diff_src_layout() const { return diff_src_layout_; }

 private:
  Primitive<dnnl::pooling_backward> prim_;
  std::shared_ptr<const MemoryLayout> diff_src_layout_;
};

}  // namespace trib::kernels
