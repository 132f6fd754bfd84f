// oneDNN convolutions for one conv2d node: forward, backward data and backward weights, each
// built once (with its layout conversions) and run every step. Tensors stay plain outside
// (x NCHW, w OIHW); every primitive picks its preferred layouts with format_tag::any, and
// Relayout converts at its edges only where the choice differs from plain.
#pragma once

#include "engine/kernels/dnnl_call.h"
#include "engine/kernels/relayout.h"
#include "engine/kernels/window_geometry.h"

namespace trib::kernels {

class ConvForwardDnnl {
 public:
  ConvForwardDnnl(const Conv2dGeometry& g, bool training, const dnnl::engine& eng);
  void run(DnnlCall& call, const Tensor& x, const Tensor& w, const Tensor& y) const;

 private:
  Primitive<dnnl::convolution_forward> prim_;
  Relayout src_, weights_, dst_;
};

class ConvBackwardDataDnnl {
 public:
  ConvBackwardDataDnnl(const Conv2dGeometry& g, const dnnl::engine& eng);
  void run(DnnlCall& call, const Tensor& dy, const Tensor& w, const Tensor& dx) const;

 private:
  Primitive<dnnl::convolution_backward_data> prim_;
  Relayout diff_dst_, weights_, diff_src_;
};

class ConvBackwardWeightsDnnl {
 public:
  ConvBackwardWeightsDnnl(const Conv2dGeometry& g, const dnnl::engine& eng);
  void run(DnnlCall& call, const Tensor& x, const Tensor& dy, const Tensor& dw) const;

 private:
  Primitive<dnnl::convolution_backward_weights> prim_;
  Relayout src_, diff_dst_, diff_weights_;
};

}  // namespace trib::kernels
