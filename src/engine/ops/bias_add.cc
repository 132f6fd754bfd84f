// bias_add: x [N, C, ...] plus bias [C] along axis 1, the layout of dense ([N, C]) and
// convolution ([N, C, H, W]) outputs. Cheaper than a broadcasting add: the bias index is
// known per row, and no broadcast plan is needed.
#include "engine/kernels/parallel.h"
#include "engine/ops/fusion.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

class BiasAddOp final : public Op {
 public:
  std::string_view name() const override { return "bias_add"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    const TensorSpec& x = in[0];
    const TensorSpec& b = in[1];
    TRIB_CHECK(x.dtype == DType::f32 && b.dtype == DType::f32, ShapeError,
               "bias_add needs f32 operands, got {} and {}", x.to_string(), b.to_string());
    TRIB_CHECK(x.shape.rank() >= 2, ShapeError, "bias_add needs x with a channel axis ([N, C, ...]), got {}",
               x.shape.to_string());
    TRIB_CHECK(b.shape.rank() == 1 && b.shape.dims()[0] == x.shape.dims()[1], ShapeError,
               "bias must be [{}] (x's axis 1), got {}", x.shape.dims()[1], b.shape.to_string());
    return {x};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const float* px = x.data<float>();
    const float* pb = ctx.input(1).data<float>();
    float* py = ctx.output_reusing(0, 0).data<float>();
    if (x.numel() == 0) return;
    const std::int64_t n = x.shape().dims()[0], c = x.shape().dims()[1], inner = x.numel() / (n * c);
    if (inner == 1) {  // [N, C]: every row adds the whole bias
      kernels::parallel_for(n, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
#pragma omp simd
          for (std::int64_t j = 0; j < c; ++j) py[r * c + j] = px[r * c + j] + pb[j];
        }
      }, c);
      return;
    }
    // [N, C, spatial]: each (n, c) plane adds one bias value.
    kernels::parallel_for(n * c, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t r = b; r < e; ++r) {
        const float v = pb[r % c];
        const float* xr = px + r * inner;
        float* yr = py + r * inner;
#pragma omp simd
        for (std::int64_t j = 0; j < inner; ++j) yr[j] = xr[j] + v;
      }
    }, inner);
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const std::int64_t c = x.shape().dims()[1], inner = x.shape().strides()[1];
    for (std::int64_t i = 0; i < x.numel(); ++i)
      y.data<float>()[i] = x.data<float>()[i] + ctx.input(1).data<float>()[(i / inner) % c];
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    std::vector<int> axes{0};
    for (int a = 2; a < ctx.input_spec(0).shape.rank(); ++a) axes.push_back(a);
    return {{ctx.grad(), {}}, {ops::sum(ctx.graph, ctx.grad(), std::move(axes)), {}}};
  }
};

}  // namespace

Value ops::bias_add(Graph& g, Value x, Value bias, const std::string& name) {
  // After a convolution or matmul: one fused node (fusion.h), when the bias fits; anything
  // else gets the plain op and its shape checks.
  if (const Fusable* f = fusable_producer(g, x); f && valid_value(g, bias)) {
    const TensorSpec& xs = g.spec(x);
    if (xs.shape.rank() >= 2 && g.spec(bias) == (TensorSpec{DType::f32, Shape{xs.shape[1]}}))
      if (auto fused = f->fuse_bias(g, Node(g.node(x)), bias, name)) return *fused;
  }
  return g.add1(std::make_shared<BiasAddOp>(), {x, bias}, name);
}

}  // namespace trib
