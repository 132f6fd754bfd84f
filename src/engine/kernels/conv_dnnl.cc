#include "engine/kernels/conv_dnnl.h"

namespace trib::kernels {
namespace {

dnnl::memory::desc any_desc(const Shape& s) {
  return {dims_of(s), dnnl_dt::f32, dnnl_tag::any};
}

dnnl::memory::desc bias_desc(const Conv2dGeometry& g) { return plain_desc(Shape{g.o}); }

dnnl::memory::dims strides(const Conv2dGeometry& g) { return {g.stride_h, g.stride_w}; }
// oneDNN wants explicit right padding; the symmetric value passes its size check, which
// rounds down exactly as our output size does.
dnnl::memory::dims pads(const Conv2dGeometry& g) { return {g.pad_h, g.pad_w}; }

dnnl::convolution_forward::primitive_desc forward_pd(const Conv2dGeometry& g, bool bias, bool relu,
                                                     bool training, const dnnl::engine& eng) {
  auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  auto d = bias ? dnnl::convolution_forward::desc(
                      prop, dnnl::algorithm::convolution_direct, any_desc(g.x_shape()),
                      any_desc(g.w_shape()), bias_desc(g), any_desc(g.y_shape()), strides(g),
                      pads(g), pads(g))
                : dnnl::convolution_forward::desc(
                      prop, dnnl::algorithm::convolution_direct, any_desc(g.x_shape()),
                      any_desc(g.w_shape()), any_desc(g.y_shape()), strides(g), pads(g), pads(g));
  dnnl::primitive_attr attr = cached_primitive_attr();
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return {d, attr, eng};
}

dnnl::convolution_backward_data::primitive_desc backward_data_pd(const Conv2dGeometry& g,
                                                                 const dnnl::engine& eng) {
  dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct,
                                          any_desc(g.x_shape()), any_desc(g.w_shape()),
                                          any_desc(g.y_shape()), strides(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng, forward_pd(g, false, false, true, eng)};
}

dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(const Conv2dGeometry& g,
                                                                       bool bias,
                                                                       const dnnl::engine& eng) {
  auto d = bias ? dnnl::convolution_backward_weights::desc(
                      dnnl::algorithm::convolution_direct, any_desc(g.x_shape()),
                      any_desc(g.w_shape()), bias_desc(g), any_desc(g.y_shape()), strides(g),
                      pads(g), pads(g))
                : dnnl::convolution_backward_weights::desc(
                      dnnl::algorithm::convolution_direct, any_desc(g.x_shape()),
                      any_desc(g.w_shape()), any_desc(g.y_shape()), strides(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng, forward_pd(g, bias, false, true, eng)};
}

dnnl::memory::desc have(const MemoryLayout* layout, const dnnl::memory::desc& plain) {
  return layout ? layout->desc() : plain;
}

}  // namespace

ConvForwardDnnl::ConvForwardDnnl(const Conv2dGeometry& g, bool bias, bool relu, bool training,
                                 const dnnl::engine& eng)
    : prim_(forward_pd(g, bias, relu, training, eng)), x_plain_(plain_desc(g.x_shape())),
      w_plain_(plain_desc(g.w_shape())), b_plain_(bias_desc(g)),
      dst_layout_(layout_unless_plain(prim_.pd.dst_desc(), {DType::f32, g.y_shape()})) {}

void ConvForwardDnnl::run(DnnlCall& call, const Tensor& x, const MemoryLayout* x_layout,
                          const Tensor& w, const Tensor* b, const Tensor& y) const {
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, call.input(x, have(x_layout, x_plain_), prim_.pd.src_desc())},
      {DNNL_ARG_WEIGHTS, call.input(w, w_plain_, prim_.pd.weights_desc())},
      {DNNL_ARG_DST, call.wrap(y, prim_.pd.dst_desc())}};
  if (b != nullptr) args.emplace(DNNL_ARG_BIAS, call.wrap(*b, b_plain_));
  call.run(prim_, std::move(args));
}

ConvBackwardDataDnnl::ConvBackwardDataDnnl(const Conv2dGeometry& g, const dnnl::engine& eng)
    : prim_(backward_data_pd(g, eng)), dy_plain_(plain_desc(g.y_shape())),
      w_plain_(plain_desc(g.w_shape())),
      diff_src_layout_(layout_unless_plain(prim_.pd.diff_src_desc(), {DType::f32, g.x_shape()})) {}

void ConvBackwardDataDnnl::run(DnnlCall& call, const Tensor& dy, const MemoryLayout* dy_layout,
                               const Tensor& w, const Tensor& dx) const {
  call.run(prim_, {{DNNL_ARG_DIFF_DST, call.input(dy, have(dy_layout, dy_plain_), prim_.pd.diff_dst_desc())},
                   {DNNL_ARG_WEIGHTS, call.input(w, w_plain_, prim_.pd.weights_desc())},
                   {DNNL_ARG_DIFF_SRC, call.wrap(dx, prim_.pd.diff_src_desc())}});
}

ConvBackwardWeightsDnnl::ConvBackwardWeightsDnnl(const Conv2dGeometry& g, bool bias,
                                                 const dnnl::engine& eng)
    : prim_(backward_weights_pd(g, bias, eng)), x_plain_(plain_desc(g.x_shape())),
      dy_plain_(plain_desc(g.y_shape())), w_plain_(plain_desc(g.w_shape())),
      b_plain_(bias_desc(g)) {}

void ConvBackwardWeightsDnnl::run(DnnlCall& call, const Tensor& x, const MemoryLayout* x_layout,
                                  const Tensor& dy, const MemoryLayout* dy_layout, const Tensor& dw,
                                  const Tensor* db) const {
  dnnl::memory diff_weights = call.output(dw, w_plain_, prim_.pd.diff_weights_desc());
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, call.input(x, have(x_layout, x_plain_), prim_.pd.src_desc())},
      {DNNL_ARG_DIFF_DST, call.input(dy, have(dy_layout, dy_plain_), prim_.pd.diff_dst_desc())},
      {DNNL_ARG_DIFF_WEIGHTS, diff_weights}};
  if (db != nullptr) args.emplace(DNNL_ARG_DIFF_BIAS, call.wrap(*db, b_plain_));
  call.run(prim_, std::move(args));
  call.finish_output(diff_weights, dw, w_plain_);
}

}  // namespace trib::kernels
