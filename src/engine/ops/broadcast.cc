// broadcast_to and its adjoint sum_to: each is the other's gradient. Broadcasting copies
// with the strided loop of the element-wise ops; summing uses the reduction kernel.
#include "engine/kernels/broadcast_index.h"
#include "engine/kernels/once_cell.h"
#include "engine/kernels/reduce_sum.h"
#include "engine/kernels/strided_loop.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

// The axes of `from` that sum_to(from -> to) adds up: the leading ones `to` lacks, and those
// where `to` has 1 (where `from` also has 1 the flag does not matter).
std::vector<bool> summed_axes(const Shape& from, const Shape& to) {
  std::vector<bool> reduce(from.rank(), true);
  const int shift = from.rank() - to.rank();
  for (int a = shift; a < from.rank(); ++a) reduce[a] = to.dims()[a - shift] == 1;
  return reduce;
}

class BroadcastToOp final : public Op {
 public:
  explicit BroadcastToOp(Shape shape) : shape_(std::move(shape)) {}
  std::string_view name() const override { return "broadcast_to"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "broadcast_to needs f32, got {}", in[0].to_string());
    TRIB_CHECK(kernels::broadcasts_to(in[0].shape, shape_), ShapeError,
               "{} does not broadcast to {} (aligned from the right, each axis must match or be 1)",
               in[0].shape.to_string(), shape_.to_string());
    return {{DType::f32, shape_}};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const kernels::StridedLoop& loop = plan_.get([&] {
      return kernels::plan_loop(shape_, {kernels::broadcast_strides(x.shape(), shape_)});
    });
    Tensor& y = ctx.output(0);
    if (y.numel() == 0) return;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const bool contiguous = loop.strides[0].back() == 1;
    auto copy_run = [&](std::int64_t o, const kernels::Offsets<1>& off, std::int64_t n) {
      if (contiguous) std::copy_n(px + off[0], n, py + o);
      else std::fill_n(py + o, n, px[off[0]]);
    };
    kernels::for_each_run<1>(loop, ctx.intra_op_threads(), copy_run);
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const auto strides = kernels::broadcast_strides(x.shape(), shape_);
    for (std::int64_t i = 0; i < y.numel(); ++i)
      y.data<float>()[i] = x.data<float>()[kernels::offset_of(i, shape_, strides)];
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::sum_to(ctx.graph, ctx.grad(), ctx.input_spec(0).shape), {}}};
  }

 private:
  Shape shape_;
  kernels::OnceCell<kernels::StridedLoop> plan_;
};

class SumToOp final : public Op {
 public:
  explicit SumToOp(Shape shape) : shape_(std::move(shape)) {}
  std::string_view name() const override { return "sum_to"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "sum_to needs f32, got {}", in[0].to_string());
    TRIB_CHECK(kernels::broadcasts_to(shape_, in[0].shape), ShapeError,
               "cannot sum {} to {}: the target must broadcast to the input", in[0].shape.to_string(),
               shape_.to_string());
    return {{DType::f32, shape_}};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    kernels::sum_axes(x.data<float>(), x.shape(), summed_axes(x.shape(), shape_),
                      ctx.output(0).data<float>(), 1.0f, ctx.intra_op_threads());
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    kernels::sum_axes_reference(x.data<float>(), x.shape(), summed_axes(x.shape(), shape_),
                                ctx.output(0).data<float>(), 1.0f);
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::broadcast_to(ctx.graph, ctx.grad(), ctx.input_spec(0).shape), {}}};
  }

 private:
  Shape shape_;
};

}  // namespace

Value ops::broadcast_to(Graph& g, Value x, Shape shape, const std::string& name) {
  return g.add1(std::make_shared<BroadcastToOp>(std::move(shape)), {x}, name);
}

Value ops::sum_to(Graph& g, Value x, Shape shape, const std::string& name) {
  return g.add1(std::make_shared<SumToOp>(std::move(shape)), {x}, name);
}

}  // namespace trib
