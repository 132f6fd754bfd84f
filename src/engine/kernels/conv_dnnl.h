// oneDNN convolutions for one conv2d node: forward (with an optional bias and ReLU fused in
// as the primitive's own bias and post-op), backward data and backward weights (with the
// bias gradient, which the same primitive sums on the way). Each is built once and run
// every step. Every primitive picks its preferred layouts (format_tag::any): activations
// then stay in oneDNN's blocked layouts between kernels that accept them (see
// memory_layout.h), and a tensor is converted only where its layout differs from the one
// chosen. Weights and biases are variables, plain (w OIHW), reordered each step (small).
#pragma once

#include "engine/kernels/dnnl_call.h"
#include "engine/kernels/window_geometry.h"

namespace trib::kernels {

class ConvForwardDnnl {
 public:
  ConvForwardDnnl(const Conv2dGeometry& g, bool bias, bool relu, bool training,
                  const dnnl::engine& eng);
  // x stored in x_layout (null: plain NCHW); b may be null when built without bias. y must
  // be allocated in dst_layout().
  void run(DnnlCall& call, const Tensor& x, const MemoryLayout* x_layout, const Tensor& w,
           const Tensor* b, const Tensor& y) const;
  // The layout y is written in: null when oneDNN chose plain NCHW.
  const std::shared_ptr<const MemoryLayout>& dst_layout() const { return dst_layout_; }

 private:
  Primitive<dnnl::convolution_forward> prim_;
  dnnl::memory::desc x_plain_, w_plain_, b_plain_;
  std::shared_ptr<const MemoryLayout> dst_layout_;
};

class ConvBackwardDataDnnl {
 public:
  ConvBackwardDataDnnl(const Conv2dGeometry& g, const dnnl::engine& eng);
  // dx must be allocated in diff_src_layout().
  void run(DnnlCall& call, const Tensor& dy, const MemoryLayout* dy_layout, const Tensor& w,
           const Tensor& dx) const;
  const std::shared_ptr<const MemoryLayout>& diff_src_layout() const { return diff_src_layout_; }

 private:
  Primitive<dnnl::convolution_backward_data> prim_;
  dnnl::memory::desc dy_plain_, w_plain_;
  std::shared_ptr<const MemoryLayout> diff_src_layout_;
};

class ConvBackwardWeightsDnnl {
 public:
  ConvBackwardWeightsDnnl(const Conv2dGeometry& g, bool bias, const dnnl::engine& eng);
  // dw plain OIHW; db plain [O], or null when built without bias.
  void run(DnnlCall& call, const Tensor& x, const MemoryLayout* x_layout, const Tensor& dy,
           const MemoryLayout* dy_layout, const Tensor& dw, const Tensor* db) const;

 private:
  Primitive<dnnl::convolution_backward_weights> prim_;
  dnnl::memory::desc x_plain_, dy_plain_, w_plain_, b_plain_;
};

}  // namespace trib::kernels
