// max_pool2d and avg_pool2d on NCHW tensors (oneDNN, with reference loops in
// kernels/pool_ref), and their backward ops. Max pooling's node has a second output, the
// workspace recording where each maximum came from, which its backward op reads; it is i32
// with the output's shape, enough room for oneDNN's encoding (at most 4 bytes per cell) and
// for the reference kernel's plane indices.
#include <array>

#include "engine/kernels/once_cell.h"
#include "engine/kernels/pool_dnnl.h"
#include "engine/kernels/pool_ref.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

using kernels::PoolKind;

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
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& pool = forward_[ctx.training()].get([&] {
      return kernels::PoolForwardDnnl(geometry(x), kind_, ctx.training(), eng);
    });
    // At inference the workspace stays unwritten: no backward op may read it then.
    Tensor workspace = kind_ == PoolKind::max ? ctx.output(1) : Tensor();
    kernels::DnnlCall call(eng, ctx.allocator());
    pool.run(call, x, ctx.output(0), workspace);
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (kind_ == PoolKind::max)
      kernels::max_pool2d_forward_ref(geometry(x), x.data<float>(), ctx.output(0).data<float>(),
                                      ctx.output(1).data<std::int32_t>());
    else
      kernels::avg_pool2d_forward_ref(geometry(x), x.data<float>(), ctx.output(0).data<float>());
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    const Shape& x_shape = ctx.input_spec(0).shape;
    Value dx = kind_ == PoolKind::max
                   ? ops::backward::max_pool2d_data(ctx.graph, ctx.grad(), ctx.output(1), x_shape, opts_)
                   : ops::backward::avg_pool2d_data(ctx.graph, ctx.grad(), x_shape, opts_);
    return {{dx, {}}};
  }

 private:
  kernels::Pool2dGeometry geometry(const Tensor& x) const {
    return kernels::pool2d_geometry(x.shape(), opts_);
  }

  PoolKind kind_;
  ops::Pool2dOptions opts_;
  std::array<kernels::OnceCell<kernels::PoolForwardDnnl>, 2> forward_;  // [training]
};

// Inputs (dy) for average pooling, (dy, workspace) for max pooling.
class Pool2dBackwardOp final : public Op {
 public:
  Pool2dBackwardOp(PoolKind kind, ops::Pool2dOptions opts, Shape x_shape)
      : kind_(kind), opts_(opts), x_shape_(std::move(x_shape)) {}
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
  void compute(KernelContext& ctx) const override {
    check_training(ctx);
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& pool = prim_.get([&] { return kernels::PoolBackwardDnnl(geometry(), kind_, eng); });
    Tensor workspace = kind_ == PoolKind::max ? ctx.input(1) : Tensor();
    kernels::DnnlCall call(eng, ctx.allocator());
    pool.run(call, ctx.input(0), workspace, ctx.output(0));
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
  kernels::OnceCell<kernels::PoolBackwardDnnl> prim_;
};

}  // namespace

Value ops::max_pool2d(Graph& g, Value x, Pool2dOptions opts, const std::string& name) {
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
  return g.add1(std::make_shared<Pool2dBackwardOp>(PoolKind::max, opts, std::move(x_shape)),
                {dy, workspace});
}

Value ops::backward::avg_pool2d_data(Graph& g, Value dy, Shape x_shape, Pool2dOptions opts) {
  return g.add1(std::make_shared<Pool2dBackwardOp>(PoolKind::avg, opts, std::move(x_shape)), {dy});
}

}  // namespace trib
