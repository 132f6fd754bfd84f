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

dnnl::pooling_forward::primitive_desc forward_pd(const Pool2dGeometry& g, PoolKind kind,
                                                 bool training, const dnnl::engine& eng) {
  auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::pooling_forward::desc d(prop, algorithm_of(kind), plain_desc(g.x_shape()),
                                plain_desc(g.y_shape()), strides(g), kernel(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng};
}

dnnl::pooling_backward::primitive_desc backward_pd(const Pool2dGeometry& g, PoolKind kind,
                                                   const dnnl::engine& eng) {
  dnnl::pooling_backward::desc d(algorithm_of(kind), plain_desc(g.x_shape()),
                                 plain_desc(g.y_shape()), strides(g), kernel(g), pads(g), pads(g));
  return {d, cached_primitive_attr(), eng, forward_pd(g, kind, true, eng)};
}

void check_workspace(const dnnl::memory::desc& md, const Tensor& workspace) {
  TRIB_CHECK(md.get_size() == 0 || workspace.nbytes() >= md.get_size(), Error,
             "pooling workspace of {} bytes is smaller than the {} bytes oneDNN needs",
             workspace.nbytes(), md.get_size());
}

}  // namespace

PoolForwardDnnl::PoolForwardDnnl(const Pool2dGeometry& g, PoolKind kind, bool training,
                                 const dnnl::engine& eng)
    : prim_(forward_pd(g, kind, training, eng)) {}

void PoolForwardDnnl::run(DnnlCall& call, const Tensor& x, const Tensor& y,
                          const Tensor& workspace) const {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, call.wrap(x, prim_.pd.src_desc())},
                                             {DNNL_ARG_DST, call.wrap(y, prim_.pd.dst_desc())}};
  dnnl::memory::desc ws = prim_.pd.workspace_desc();
  if (ws.get_size() > 0) {
    check_workspace(ws, workspace);
    args.emplace(DNNL_ARG_WORKSPACE, call.wrap(workspace, ws));
  }
  call.run(prim_, std::move(args));
}

PoolBackwardDnnl::PoolBackwardDnnl(const Pool2dGeometry& g, PoolKind kind, const dnnl::engine& eng)
    : prim_(backward_pd(g, kind, eng)) {}

void PoolBackwardDnnl::run(DnnlCall& call, const Tensor& dy, const Tensor& workspace,
                           const Tensor& dx) const {
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_DIFF_DST, call.wrap(dy, prim_.pd.diff_dst_desc())},
      {DNNL_ARG_DIFF_SRC, call.wrap(dx, prim_.pd.diff_src_desc())}};
  dnnl::memory::desc ws = prim_.pd.workspace_desc();
  if (ws.get_size() > 0) {
    check_workspace(ws, workspace);
    args.emplace(DNNL_ARG_WORKSPACE, call.wrap(workspace, ws));
  }
  call.run(prim_, std::move(args));
}

}  // namespace trib::kernels
