// max_pool2d and avg_pool2d (oneDNN, with reference loops in kernels/pool_ref), and their
// backward ops. Max pooling's node has a second output, the workspace recording where each
// maximum came from, which its backward op reads: i32 with the output's shape for the
// reference kernel's plane indices, oneDNN's own encoding (an opaque layout) for the fast
// one. The fast kernels run in their input's layout (blocked after a convolution); a
// layer's forward and backward op share the forward primitive, which fixes the backward's
// layouts and the workspace's encoding.
#include <array>

#include "engine/kernels/desc_cache.h"
#include "engine/kernels/once_cell.h"
#include "engine/kernels/pool_dnnl.h"
#include "engine/kernels/pool_ref.h"
#include "engine/ops/fusion.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

using kernels::PoolForwardDnnl;
using kernels::PoolKind;

// What a pooling layer's forward op hands its backward op: the forward primitive of the
// latest training run (its input's layout is fixed by the producer, so this is one object).
class PoolShared {
 public:
  void set(const PoolForwardDnnl* fwd) {
    std::lock_guard lock(mu_);
    training_forward_ = fwd;
  }
  const PoolForwardDnnl* get() const {
    std::lock_guard lock(mu_);
    return training_forward_;
  }

 private:
  mutable std::mutex mu_;
  const PoolForwardDnnl* training_forward_ = nullptr;  // owned by the forward op's cache
};

class Pool2dOp final : public Op {
 public:
  Pool2dOp(PoolKind kind, ops::Pool2dOptions opts) : kind_(kind), opts_(opts) {}
  std::string_view name() const override {
    return kind_ == PoolKind::max ? "max_pool2d" : "avg_pool2d";
  }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "{} needs f32, got {}", name(),
               in[0].to_string());
    Shape y = kernels::pool2d_geometry(in[0].shape, opts_).y_shape();
    if (kind_ == PoolKind::avg) return {{DType::f32, y}};
    return {{DType::f32, y}, {DType::i32, y}};
  }
  bool accepts_layout(int) const override { return true; }
  void compute(KernelContext& ctx) const override {
    const Shape& x_shape = ctx.input_spec(0).shape;
    const auto src = kernels::desc_of(ctx.input_layout(0).get(), ctx.input_spec(0));
    const auto& pool = forward_[ctx.training()].get(src, [&] {
      return PoolForwardDnnl(geometry(x_shape), kind_, ctx.training(), src, ctx.engine().dnnl_engine());
    });
    if (ctx.training()) shared_->set(&pool);
    // At inference the workspace stays unwritten: no backward op may read it then.
    Tensor workspace;
    if (kind_ == PoolKind::max)
      workspace = pool.workspace_layout() ? ctx.output_in_layout(1, pool.workspace_layout()) : ctx.output(1);
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    pool.run(call, ctx.input(0), ctx.output_in_layout(0, pool.dst_layout()), workspace);
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const kernels::Pool2dGeometry g = geometry(x.shape());
    if (kind_ == PoolKind::max)
      kernels::max_pool2d_forward_ref(g, x.data<float>(), ctx.output(0).data<float>(),
                                      ctx.output(1).data<std::int32_t>());
    else
      kernels::avg_pool2d_forward_ref(g, x.data<float>(), ctx.output(0).data<float>());
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override;

  const std::shared_ptr<PoolShared>& shared() const { return shared_; }

 private:
  kernels::Pool2dGeometry geometry(const Shape& x) const { return kernels::pool2d_geometry(x, opts_); }

  PoolKind kind_;
  ops::Pool2dOptions opts_;
  std::array<kernels::DescCache<PoolForwardDnnl>, 2> forward_;  // [training], by input layout
  std::shared_ptr<PoolShared> shared_ = std::make_shared<PoolShared>();
};

// Inputs (dy) for average pooling, (dy, workspace) for max pooling.
class Pool2dBackwardOp final : public Op {
 public:
  // `shared`: the forward op's, or null when this op was built without one (average
  // pooling's gradient on its own), which then works on plain layouts.
  Pool2dBackwardOp(PoolKind kind, ops::Pool2dOptions opts, Shape x_shape,
                   std::shared_ptr<PoolShared> shared)
      : kind_(kind), opts_(opts), x_shape_(std::move(x_shape)), shared_(std::move(shared)) {}
  std::string_view name() const override {
    return kind_ == PoolKind::max ? "max_pool2d_backward" : "avg_pool2d_backward";
  }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    Shape y = kernels::pool2d_geometry(x_shape_, opts_).y_shape();
    TRIB_CHECK(in[0] == (TensorSpec{DType::f32, y}), ShapeError,
               "dy must be f32{} (the pooling's output), got {}", y.to_string(), in[0].to_string());
    if (kind_ == PoolKind::max)
      TRIB_CHECK(in.size() == 2 && in[1] == (TensorSpec{DType::i32, y}), ShapeError,
                 "max pooling's backward needs the forward's workspace i32{}", y.to_string());
    return {{DType::f32, x_shape_}};
  }
  bool accepts_layout(int) const override { return true; }
  void compute(KernelContext& ctx) const override {
    check_training(ctx);
    const auto& eng = ctx.engine().dnnl_engine();
    const PoolForwardDnnl* fwd = shared_ ? shared_->get() : nullptr;
    TRIB_CHECK(fwd != nullptr || kind_ == PoolKind::avg, Error,
               "max_pool2d's backward ran before its forward ran with fast kernels in training");
    if (fwd == nullptr)
      fwd = &plain_forward_.get([&] {
        return PoolForwardDnnl(geometry(), kind_, true, kernels::plain_desc(x_shape_), eng);
      });
    const auto& pool = prims_.get(fwd->pd().src_desc(), [&] {
      return kernels::PoolBackwardDnnl(geometry(), kind_, *fwd, eng);
    });
    Tensor workspace = kind_ == PoolKind::max ? ctx.input(1) : Tensor();
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    pool.run(call, ctx.input(0), kernels::desc_of(ctx.input_layout(0).get(), ctx.input_spec(0)),
             workspace, ctx.output_in_layout(0, pool.diff_src_layout()));
  }
  void reference(KernelContext& ctx) const override {
    check_training(ctx);
    const float* dy = ctx.input(0).data<float>();
    float* dx = ctx.output(0).data<float>();
    if (kind_ == PoolKind::max)
      kernels::max_pool2d_backward_ref(geometry(), dy, ctx.input(1).data<std::int32_t>(), dx);
    else
      kernels::avg_pool2d_backward_ref(geometry(), dy, dx);
  }

 private:
  kernels::Pool2dGeometry geometry() const { return kernels::pool2d_geometry(x_shape_, opts_); }
  void check_training(const KernelContext& ctx) const {
    TRIB_CHECK(kind_ != PoolKind::max || ctx.training(), InvalidArgument,
               "max_pool2d's gradient needs a training run: only then does the forward record "
               "where each maximum came from");
  }

  PoolKind kind_;
  ops::Pool2dOptions opts_;
  Shape x_shape_;
  std::shared_ptr<PoolShared> shared_;
  kernels::OnceCell<PoolForwardDnnl> plain_forward_;
  kernels::DescCache<kernels::PoolBackwardDnnl> prims_;  // by the forward's input layout
};

std::vector<Gradient> Pool2dOp::gradient(GradContext& ctx) const {
  const Shape& x_shape = ctx.input_spec(0).shape;
  Value dx;
  if (kind_ == PoolKind::max)
    dx = ctx.graph.add1(std::make_shared<Pool2dBackwardOp>(kind_, opts_, x_shape, shared_),
                        {ctx.grad(), ctx.output(1)});
  else
    dx = ctx.graph.add1(std::make_shared<Pool2dBackwardOp>(kind_, opts_, x_shape, shared_),
                        {ctx.grad()});
  return {{dx, {}}};
}

// The forward pooling op producing `workspace`, whose primitive the backward must share.
std::shared_ptr<PoolShared> shared_of(const Graph& g, Value workspace) {
  const auto* fwd = dynamic_cast<const Pool2dOp*>(g.node(workspace).op.get());
  TRIB_CHECK(fwd != nullptr && workspace.index == 1, InvalidArgument,
             "max_pool2d's backward needs the workspace output of a max_pool2d node, got {}",
             g.describe(workspace));
  return fwd->shared();
}

bool pool_fits(const TensorSpec& x, const ops::Pool2dOptions& opts) {
  try {
    kernels::pool2d_geometry(x.shape, opts);
    return x.dtype == DType::f32;
  } catch (const ShapeError&) {
    return false;
  }
}

}  // namespace

Value ops::max_pool2d(Graph& g, Value x, Pool2dOptions opts, const std::string& name) {
  // After a fused ReLU: the ReLU moves after the pooling (fusion.h), when the pooling fits
  // (otherwise the plain node below reports why, under its own name).
  if (const Fusable* f = fusable_producer(g, x); f && pool_fits(g.spec(x), opts))
    if (auto pre = f->without_relu(g, Node(g.node(x))))
      return ops::relu(g, g.add(std::make_shared<Pool2dOp>(PoolKind::max, opts), {*pre})[0], name);
  return g.add(std::make_shared<Pool2dOp>(PoolKind::max, opts), {x}, name)[0];
}

Value ops::avg_pool2d(Graph& g, Value x, Pool2dOptions opts, const std::string& name) {
  return g.add1(std::make_shared<Pool2dOp>(PoolKind::avg, opts), {x}, name);
}

std::vector<Value> ops::backward::max_pool2d_with_workspace(Graph& g, Value x, Pool2dOptions opts) {
  return g.add(std::make_shared<Pool2dOp>(PoolKind::max, opts), {x});
}

Value ops::backward::max_pool2d_data(Graph& g, Value dy, Value workspace, Shape x_shape,
                                     Pool2dOptions opts) {
  return g.add1(std::make_shared<Pool2dBackwardOp>(PoolKind::max, opts, std::move(x_shape),
                                                   shared_of(g, workspace)),
                {dy, workspace});
}

Value ops::backward::avg_pool2d_data(Graph& g, Value dy, Shape x_shape, Pool2dOptions opts) {
  return g.add1(std::make_shared<Pool2dBackwardOp>(PoolKind::avg, opts, std::move(x_shape), nullptr),
                {dy});
}

}  // namespace trib
