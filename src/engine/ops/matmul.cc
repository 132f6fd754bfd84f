// matmul: y[M, N] = op(a) op(b), where op transposes when asked. The fast kernel
// (kernels/matmul_dnnl) is oneDNN's, built once per node (shapes are fixed when the graph is
// built) and run on the step's threads; a transposed operand is never copied by us. The same
// op with a bias [N] and a ReLU is the fused node that bias_add and relu become when they
// follow a matmul (fusion.h): oneDNN adds the bias and applies the ReLU as it writes each
// block of y, so neither costs a pass of its own.
#include <dnnl.hpp>

#include <optional>

#include "engine/kernels/matmul_dnnl.h"
#include "engine/kernels/once_cell.h"
#include "engine/ops/fusion.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

struct MatmulDims {
  std::int64_t m, k, n;
};

class MatmulOp final : public Op, public ops::Fusable {
 public:
  MatmulOp(bool transpose_a, bool transpose_b, bool bias = false, bool relu = false)
      : ta_(transpose_a), tb_(transpose_b), bias_(bias), relu_(relu) {}
  std::string_view name() const override {
    static constexpr std::string_view names[2][2] = {{"matmul", "matmul_relu"},
                                                     {"matmul_bias", "matmul_bias_relu"}};
    return names[bias_][relu_];
  }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[1].dtype == DType::f32, ShapeError,
               "matmul needs f32 operands, got {} and {}", in[0].to_string(), in[1].to_string());
    TRIB_CHECK(in[0].shape.rank() == 2 && in[1].shape.rank() == 2, ShapeError,
               "matmul needs two matrices, got ranks {} and {}", in[0].shape.rank(), in[1].shape.rank());
    const MatmulDims d = dims(in[0].shape, in[1].shape);
    const std::int64_t k_b = in[1].shape.dims()[tb_ ? 1 : 0];
    TRIB_CHECK(d.k == k_b, ShapeError, "inner dimensions {} and {} differ{}", d.k, k_b,
               ta_ || tb_ ? fmt::format(" (transpose_a={}, transpose_b={})", ta_, tb_) : "");
    if (bias_)
      TRIB_CHECK(in[2] == (TensorSpec{DType::f32, Shape{d.n}}), ShapeError,
                 "the bias must be f32[{}] (one per output column), got {}", d.n, in[2].to_string());
    return {{DType::f32, Shape{d.m, d.n}}};
  }

  // Multiply-adds at about 100 G per second on one core (AVX-512 GEMM).
  double cost_ns(std::span<const TensorSpec> in, std::span<const TensorSpec>) const override {
    const MatmulDims d = dims(in[0].shape, in[1].shape);
    return double(d.m) * double(d.k) * double(d.n) * 0.01;
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    const MatmulDims d = dims(a.shape(), b.shape());
    if (y.numel() == 0) return;
    if (d.k == 0) {  // an empty sum; oneDNN does not take zero-sized operands
      y.fill(0.0f);
      apply_bias_relu_ref(ctx, y);
      return;
    }
    const dnnl::engine& eng = ctx.engine().dnnl_engine();
    const kernels::MatmulShape shape{d.m, d.k, d.n, ta_, tb_, bias_, relu_};
    const auto& cached = prim_.get([&] { return kernels::MatmulDnnl(shape, eng); });
    // A primitive belongs to the engine it was built on; a graph run by a second engine
    // context (rare: tests comparing contexts) gets an uncached one rather than an error.
    std::optional<kernels::MatmulDnnl> own;
    const auto& kernel = cached.engine() == eng.get() ? cached : own.emplace(shape, eng);
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    kernel.run(call, a, b, bias_ ? &ctx.input(2) : nullptr, y);
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatmulDims d = dims(a.shape(), b.shape());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    Tensor& y = ctx.output(0);
    float* py = y.data<float>();
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t j = 0; j < d.n; ++j) {
        double s = 0.0;
        for (std::int64_t p = 0; p < d.k; ++p)
          s += double(ta_ ? pa[p * d.m + i] : pa[i * d.k + p]) * (tb_ ? pb[j * d.k + p] : pb[p * d.n + j]);
        py[i * d.n + j] = static_cast<float>(s);
      }
    apply_bias_relu_ref(ctx, y);
  }

  // With y = op(a) op(b): d op(a) = dy op(b)^T and d op(b) = op(a)^T dy. A transposed operand
  // takes the transpose of that, which swaps the factors instead of adding a transpose node.
  // The fused form first takes ReLU's gradient from its output, d = dy where y > 0, and the
  // bias gradient, d summed over the rows (one pass for both when it has both).
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    Graph& g = ctx.graph;
    const Value a = ctx.input(0), b = ctx.input(1);
    Value dy = ctx.grad(), dbias;
    if (relu_ && bias_) {
      auto [d, dsum] = ops::backward::bias_relu(g, dy, ctx.output(0));
      dy = d;
      dbias = dsum;
    } else if (relu_) {
      dy = ops::backward::activation(g, ops::backward::Activation::relu, dy, ctx.output(0));
    } else if (bias_) {
      dbias = ops::sum(g, dy, {0});
    }
    const Value da = ta_ ? ops::matmul(g, b, dy, tb_, true) : ops::matmul(g, dy, b, false, !tb_);
    const Value db = tb_ ? ops::matmul(g, dy, a, true, ta_) : ops::matmul(g, a, dy, !ta_, false);
    if (!bias_) return {{da, {}}, {db, {}}};
    return {{da, {}}, {db, {}}, {dbias, {}}};
  }

  std::optional<Value> fuse_bias(Graph& g, const Node& self, Value bias,
                                 const std::string& name) const override {
    if (bias_ || relu_) return std::nullopt;
    return ops::matmul_fused(g, self.inputs[0], self.inputs[1], ta_, tb_, bias, false, name);
  }
  std::optional<Value> fuse_relu(Graph& g, const Node& self, const std::string& name) const override {
    if (relu_) return std::nullopt;
    return ops::matmul_fused(g, self.inputs[0], self.inputs[1], ta_, tb_,
                             bias_ ? self.inputs[2] : Value{}, true, name);
  }
  std::optional<Value> without_relu(Graph& g, const Node& self) const override {
    if (!relu_) return std::nullopt;
    return ops::matmul_fused(g, self.inputs[0], self.inputs[1], ta_, tb_,
                             bias_ ? self.inputs[2] : Value{}, false);
  }

 private:
  // y[M, N] += bias, then ReLU, in place: the reference epilogue (and the fast one when
  // k == 0, where oneDNN is not called).
  void apply_bias_relu_ref(const KernelContext& ctx, Tensor& y) const {
    if (!bias_ && !relu_) return;
    const std::int64_t n = y.shape()[1];
    const float* b = bias_ ? ctx.input(2).data<float>() : nullptr;
    float* p = y.data<float>();
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      if (b) p[i] += b[i % n];
      if (relu_) p[i] = p[i] > 0.0f ? p[i] : 0.0f;
    }
  }

  MatmulDims dims(const Shape& a, const Shape& b) const {
    return {a.dims()[ta_ ? 1 : 0], a.dims()[ta_ ? 0 : 1], b.dims()[tb_ ? 0 : 1]};
  }

  bool ta_, tb_, bias_, relu_;
  kernels::OnceCell<kernels::MatmulDnnl> prim_;
};

}  // namespace

Value ops::matmul(Graph& g, Value a, Value b, bool transpose_a, bool transpose_b, const std::string& name) {
  return g.add1(std::make_shared<MatmulOp>(transpose_a, transpose_b), {a, b}, name);
}

Value ops::matmul_fused(Graph& g, Value a, Value b, bool transpose_a, bool transpose_b, Value bias,
                        bool relu, const std::string& name) {
  std::vector<Value> inputs{a, b};
  if (bias.valid()) inputs.push_back(bias);
  return g.add1(std::make_shared<MatmulOp>(transpose_a, transpose_b, bias.valid(), relu),
                std::move(inputs), name);
}

}  // namespace trib
