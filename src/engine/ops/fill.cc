// fill: a tensor of one value; and scale: x * constant. The smallest ops, and the pattern
// every op file follows: the op class (infer, compute, reference, gradient) and its builder.
#include "engine/kernels/parallel.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

class FillOp final : public Op {
 public:
  FillOp(TensorSpec spec, float value) : spec_(std::move(spec)), value_(value) {}
  std::string_view name() const override { return "fill"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec>) const override { return {spec_}; }
  void compute(KernelContext& ctx) const override { ctx.output(0).fill(value_); }
  std::vector<Gradient> gradient(GradContext&) const override { return {}; }

 private:
  TensorSpec spec_;
  float value_;
};

class ScaleOp final : public Op {
 public:
  explicit ScaleOp(float factor) : factor_(factor) {}
  std::string_view name() const override { return "scale"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "scale needs f32, got {}", in[0].to_string());
    return {in[0]};
  }
  void compute(KernelContext& ctx) const override {
    const float* x = ctx.input(0).data<float>();
    float* y = ctx.output_reusing(0, 0).data<float>();
    const float f = factor_;
    kernels::parallel_for(ctx.input(0).numel(), ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
#pragma omp simd
      for (std::int64_t i = b; i < e; ++i) y[i] = x[i] * f;
    });
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    for (std::int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = x.data<float>()[i] * factor_;
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::scale(ctx.graph, ctx.grad(), factor_), {}}};
  }

 private:
  float factor_;
};

}  // namespace

Value ops::fill(Graph& g, TensorSpec spec, float value, const std::string& name) {
  return g.add1(std::make_shared<FillOp>(std::move(spec), value), {}, name);
}

Value ops::scale(Graph& g, Value x, float factor, const std::string& name) {
  return g.add1(std::make_shared<ScaleOp>(factor), {x}, name);
}

}  // namespace trib
