#include "engine/kernels/conv_dnnl.h"

namespace trib::kernels {
namespace {

using Dir = Relayout::Direction;

dnnl::memory::desc any_desc(const Shape& s) {
  return {dims_of(s), dnnl_dt::f32, dnnl_tag::any};
}

dnnl::memory::dims strides(const Conv2dGeometry& g) { return {g.stride_h, g.stride_w}; }
// oneDNN wants explicit right padding; the symmetric value passes its size check, which
// rounds down exactly as our output size does.
dnnl::memory::dims pads(const Conv2dGeometry& g) { return {g.pad_h, g.pad_w}; }

dnnl::convolution_forward::primitive_desc forward_pd(const Conv2dGeometry& g, bool training,
                                                     const dnnl::engine& eng) {
  auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct,
                                    any_desc(g.x_shape()), any_desc(g.w_shape()),
                                    any_desc(g.y_shape()), strides(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng};
}

dnnl::convolution_backward_data::primitive_desc backward_data_pd(const Conv2dGeometry& g,
                                                                 const dnnl::engine& eng) {
  dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct,
                                          any_desc(g.x_shape()), any_desc(g.w_shape()),
                                          any_desc(g.y_shape()), strides(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng, forward_pd(g, true, eng)};
}

dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(const Conv2dGeometry& g,
                                                                       const dnnl::engine& eng) {
  dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct,
                                             any_desc(g.x_shape()), any_desc(g.w_shape()),
                                             any_desc(g.y_shape()), strides(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng, forward_pd(g, true, eng)};
}

}  // namespace

ConvForwardDnnl::ConvForwardDnnl(const Conv2dGeometry& g, bool training, const dnnl::engine& eng)
    : prim_(forward_pd(g, training, eng)),
      src_(plain_desc(g.x_shape()), prim_.pd.src_desc(), Dir::in, eng),
      weights_(plain_desc(g.w_shape()), prim_.pd.weights_desc(), Dir::in, eng),
      dst_(plain_desc(g.y_shape()), prim_.pd.dst_desc(), Dir::out, eng) {}

void ConvForwardDnnl::run(DnnlCall& call, const Tensor& x, const Tensor& w, const Tensor& y) const {
  dnnl::memory dst = dst_.output(call, y);
  call.run(prim_, {{DNNL_ARG_SRC, src_.input(call, x)},
                   {DNNL_ARG_WEIGHTS, weights_.input(call, w)},
                   {DNNL_ARG_DST, dst}});
  dst_.finish_output(call, dst, y);
}

ConvBackwardDataDnnl::ConvBackwardDataDnnl(const Conv2dGeometry& g, const dnnl::engine& eng)
    : prim_(backward_data_pd(g, eng)),
      diff_dst_(plain_desc(g.y_shape()), prim_.pd.diff_dst_desc(), Dir::in, eng),
      weights_(plain_desc(g.w_shape()), prim_.pd.weights_desc(), Dir::in, eng),
      diff_src_(plain_desc(g.x_shape()), prim_.pd.diff_src_desc(), Dir::out, eng) {}

void ConvBackwardDataDnnl::run(DnnlCall& call, const Tensor& dy, const Tensor& w,
                               const Tensor& dx) const {
  dnnl::memory diff_src = diff_src_.output(call, dx);
  call.run(prim_, {{DNNL_ARG_DIFF_DST, diff_dst_.input(call, dy)},
                   {DNNL_ARG_WEIGHTS, weights_.input(call, w)},
                   {DNNL_ARG_DIFF_SRC, diff_src}});
  diff_src_.finish_output(call, diff_src, dx);
}

ConvBackwardWeightsDnnl::ConvBackwardWeightsDnnl(const Conv2dGeometry& g, const dnnl::engine& eng)
    : prim_(backward_weights_pd(g, eng)),
      src_(plain_desc(g.x_shape()), prim_.pd.src_desc(), Dir::in, eng),
      diff_dst_(plain_desc(g.y_shape()), prim_.pd.diff_dst_desc(), Dir::in, eng),
      diff_weights_(plain_desc(g.w_shape()), prim_.pd.diff_weights_desc(), Dir::out, eng) {}

void ConvBackwardWeightsDnnl::run(DnnlCall& call, const Tensor& x, const Tensor& dy,
                                  const Tensor& dw) const {
  dnnl::memory diff_weights = diff_weights_.output(call, dw);
  call.run(prim_, {{DNNL_ARG_SRC, src_.input(call, x)},
                   {DNNL_ARG_DIFF_DST, diff_dst_.input(call, dy)},
                   {DNNL_ARG_DIFF_WEIGHTS, diff_weights}});
  diff_weights_.finish_output(call, diff_weights, dw);
}

}  // namespace trib::kernels
