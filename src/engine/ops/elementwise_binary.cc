// add, sub, mul and div with NumPy broadcasting. One op class, one kernel template: the
// operation is a compile-time parameter so each inner loop vectorises on its own.
#include "engine/kernels/broadcast_index.h"
#include "engine/kernels/once_cell.h"
#include "engine/kernels/strided_loop.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

enum class BinaryKind { add, sub, mul, div };

template <BinaryKind K>
inline float apply(float a, float b) {
  if constexpr (K == BinaryKind::add) return a + b;
  else if constexpr (K == BinaryKind::sub) return a - b;
  else if constexpr (K == BinaryKind::mul) return a * b;
  else return a / b;
}

// y may alias a or b (in place); each element is read before it is written.
template <BinaryKind K>
void binary_kernel(const kernels::StridedLoop& loop, const float* a, const float* b, float* y,
                   int threads) {
  const std::int64_t sa = loop.strides[0].back(), sb = loop.strides[1].back();
  auto run = [&](std::int64_t o, const kernels::Offsets<2>& off, std::int64_t n) {
    const float* pa = a + off[0];
    const float* pb = b + off[1];
    float* py = y + o;
    if (sa == 1 && sb == 1) {
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i) py[i] = apply<K>(pa[i], pb[i]);
    } else if (sa == 1) {  // b repeats along the run: a row of a with one b (or a scalar b)
      const float vb = *pb;
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i) py[i] = apply<K>(pa[i], vb);
    } else if (sb == 1) {
      const float va = *pa;
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i) py[i] = apply<K>(va, pb[i]);
    } else {
      std::fill_n(py, n, apply<K>(*pa, *pb));
    }
  };
  kernels::for_each_run<2>(loop, threads, run);
}

template <BinaryKind K>
void binary_reference(const Tensor& a, const Tensor& b, Tensor& y) {
  const auto sa = kernels::broadcast_strides(a.shape(), y.shape());
  const auto sb = kernels::broadcast_strides(b.shape(), y.shape());
  for (std::int64_t i = 0; i < y.numel(); ++i)
    y.data<float>()[i] = apply<K>(a.data<float>()[kernels::offset_of(i, y.shape(), sa)],
                                  b.data<float>()[kernels::offset_of(i, y.shape(), sb)]);
}

// The gradient of a broadcast operand: sum the output gradient over the axes it repeated.
Value reduce_like(Graph& g, Value grad, const TensorSpec& operand) {
  if (g.spec(grad).shape == operand.shape) return grad;
  return ops::sum_to(g, grad, operand.shape);
}

template <BinaryKind K>
class BinaryOp final : public Op {
 public:
  std::string_view name() const override {
    switch (K) {
      case BinaryKind::add: return "add";
      case BinaryKind::sub: return "sub";
      case BinaryKind::mul: return "mul";
      case BinaryKind::div: return "div";
    }
    return "";
  }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[1].dtype == DType::f32, ShapeError,
               "{} needs f32 operands, got {} and {}", name(), in[0].to_string(), in[1].to_string());
    auto out = kernels::broadcast_shapes(in[0].shape, in[1].shape);
    TRIB_CHECK(out.has_value(), ShapeError,
               "shapes {} and {} do not broadcast (aligned from the right, each axis must match or be 1)",
               in[0].shape.to_string(), in[1].shape.to_string());
    return {{DType::f32, *out}};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Shape& out = ctx.output_spec(0).shape;
    const kernels::StridedLoop& loop = plan_.get([&] {
      return kernels::plan_loop(out, {kernels::broadcast_strides(a.shape(), out),
                                      kernels::broadcast_strides(b.shape(), out)});
    });
    // In place over an operand of the output's shape when nothing else reads it.
    Tensor& y = (a.shape() == out && ctx.input_is_last_use(0)) ? ctx.output_reusing(0, 0)
              : (b.shape() == out && ctx.input_is_last_use(1)) ? ctx.output_reusing(0, 1)
                                                               : ctx.output(0);
    if (y.numel() == 0) return;
    binary_kernel<K>(loop, a.data<float>(), b.data<float>(), y.data<float>(), ctx.intra_op_threads());
  }

  void reference(KernelContext& ctx) const override {
    binary_reference<K>(ctx.input(0), ctx.input(1), ctx.output(0));
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    Graph& g = ctx.graph;
    const TensorSpec& sa = ctx.input_spec(0);
    const TensorSpec& sb = ctx.input_spec(1);
    const Value dy = ctx.grad();
    if constexpr (K == BinaryKind::add) {
      return {{reduce_like(g, dy, sa), {}}, {reduce_like(g, dy, sb), {}}};
    } else if constexpr (K == BinaryKind::sub) {
      return {{reduce_like(g, dy, sa), {}}, {ops::scale(g, reduce_like(g, dy, sb), -1.0f), {}}};
    } else if constexpr (K == BinaryKind::mul) {
      return {{reduce_like(g, ops::mul(g, dy, ctx.input(1)), sa), {}},
              {reduce_like(g, ops::mul(g, dy, ctx.input(0)), sb), {}}};
    } else {
      // d(a/b)/db = -a/b^2 = -(a/b)/b: reuses the forward output instead of squaring b.
      Value db = ops::div(g, ops::mul(g, dy, ctx.output(0)), ctx.input(1));
      return {{reduce_like(g, ops::div(g, dy, ctx.input(1)), sa), {}},
              {ops::scale(g, reduce_like(g, db, sb), -1.0f), {}}};
    }
  }

 private:
  kernels::OnceCell<kernels::StridedLoop> plan_;
};

template <BinaryKind K>
Value add_binary(Graph& g, Value a, Value b, const std::string& name) {
  return g.add1(std::make_shared<BinaryOp<K>>(), {a, b}, name);
}

}  // namespace

Value ops::add(Graph& g, Value a, Value b, const std::string& name) {
  return add_binary<BinaryKind::add>(g, a, b, name);
}
Value ops::sub(Graph& g, Value a, Value b, const std::string& name) {
  return add_binary<BinaryKind::sub>(g, a, b, name);
}
Value ops::mul(Graph& g, Value a, Value b, const std::string& name) {
  return add_binary<BinaryKind::mul>(g, a, b, name);
}
Value ops::div(Graph& g, Value a, Value b, const std::string& name) {
  return add_binary<BinaryKind::div>(g, a, b, name);
}

}  // namespace trib
