#include "engine/kernels/pool_dnnl.h"

namespace trib::kernels {
namespace {

dnnl::algorithm algorithm_of(PoolKind kind) {
  return kind == PoolKind::max ? dnnl::algorithm::pooling_max
                               : dnnl::algorithm::pooling_avg_exclude_padding;
}

dnnl::memory::dims strides(const Pool2dGeometry& g) { return {g.stride_h, g.stride_w}; }
dnnl::memory::dims kernel(const Pool2dGeometry& g) { return {g.kh, g.kw}; }
dnnl::memory::dims pads(const Pool2dGeometry& g) { return {g.pad_h, g.pad_w}; }

dnnl::memory::desc any_desc(const Shape& s) { return {dims_of(s), dnnl_dt::f32, dnnl_tag::any}; }

// The output takes the input's layout (format_tag::any lets the primitive match it).
dnnl::pooling_forward::primitive_desc forward_pd(const Pool2dGeometry& g, PoolKind kind,
                                                 bool training, const dnnl::memory::desc& src,
                                                 const dnnl::engine& eng) {
  auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::pooling_forward::desc d(prop, algorithm_of(kind), src, any_desc(g.y_shape()), strides(g),
                                kernel(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng};
}

dnnl::pooling_backward::primitive_desc backward_pd(const Pool2dGeometry& g, PoolKind kind,
                                                   const PoolForwardDnnl& fwd,
                                                   const dnnl::engine& eng) {
  dnnl::pooling_backward::desc d(algorithm_of(kind), fwd.pd().src_desc(), fwd.pd().dst_desc(),
                                 strides(g), kernel(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng, fwd.pd()};
}

std::shared_ptr<const MemoryLayout> opaque(const dnnl::memory::desc& md) {
  if (md.get_size() == 0) return nullptr;
  return std::make_shared<const MemoryLayout>(md);
}

}  // namespace

PoolForwardDnnl::PoolForwardDnnl(const Pool2dGeometry& g, PoolKind kind, bool training,
                                 const dnnl::memory::desc& src, const dnnl::engine& eng)
    : prim_(forward_pd(g, kind, training, src, eng)),
      dst_layout_(layout_unless_plain(prim_.pd.dst_desc(), {DType::f32, g.y_shape()})),
      ws_layout_(opaque(prim_.pd.workspace_desc())) {}

void PoolForwardDnnl::run(DnnlCall& call, const Tensor& x, const Tensor& y,
                          const Tensor& workspace) const {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, call.wrap(x, prim_.pd.src_desc())},
                                             {DNNL_ARG_DST, call.wrap(y, prim_.pd.dst_desc())}};
  if (ws_layout_) args.emplace(DNNL_ARG_WORKSPACE, call.wrap(workspace, ws_layout_->desc()));
  call.run(prim_, std::move(args));
}

PoolBackwardDnnl::PoolBackwardDnnl(const Pool2dGeometry& g, PoolKind kind,
                                   const PoolForwardDnnl& forward, const dnnl::engine& eng)
    : prim_(backward_pd(g, kind, forward, eng)),
      diff_src_layout_(layout_unless_plain(prim_.pd.diff_src_desc(), {DType::f32, g.x_shape()})) {}

void PoolBackwardDnnl::run(DnnlCall& call, const Tensor& dy, const dnnl::memory::desc& dy_desc,
                           const Tensor& workspace, const Tensor& dx) const {
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_DIFF_DST, call.input(dy, dy_desc, prim_.pd.diff_dst_desc())},
      {DNNL_ARG_DIFF_SRC, call.wrap(dx, prim_.pd.diff_src_desc())}};
  const dnnl::memory::desc ws = prim_.pd.workspace_desc();
  if (ws.get_size() > 0) {
    TRIB_CHECK(workspace.defined() && workspace.nbytes() >= ws.get_size(), Error,
               "pooling workspace of {} bytes is smaller than the {} bytes oneDNN needs",
               workspace.defined() ? workspace.nbytes() : 0, ws.get_size());
    args.emplace(DNNL_ARG_WORKSPACE, call.wrap(workspace, ws));
  }
  call.run(prim_, std::move(args));
}

}  // namespace trib::kernels
