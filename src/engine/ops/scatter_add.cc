// scatter_add: a dense [V, D...] from rows [n, D...] and their row ids [n], duplicates
// summed; it is where a sparse gradient (an embedding's) meets a dense one. Its gradient
// with respect to the rows is a gather of the output gradient's rows (gather_rows, below),
// whose own gradient is scatter_add again.
#include "engine/kernels/parallel.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

// ids as i64 whichever integer type they are, each checked against [0, v).
std::vector<std::int64_t> checked_ids(const Tensor& ids, std::int64_t v) {
  std::vector<std::int64_t> out(ids.numel());
  for (std::int64_t i = 0; i < ids.numel(); ++i) {
    out[i] = ids.dtype() == DType::i32 ? ids.data<std::int32_t>()[i] : ids.data<std::int64_t>()[i];
    TRIB_CHECK(out[i] >= 0 && out[i] < v, InvalidArgument,
               "id {} at position {} is out of range: ids must lie in [0, V) with V = {}", out[i], i, v);
  }
  return out;
}

// Shared by both ops: rows [n, D...] with ids [n] against a dense [V, D...].
void check_rows_and_ids(const TensorSpec& rows, const TensorSpec& ids, const Shape& dense) {
  TRIB_CHECK(rows.dtype == DType::f32 && rows.shape.rank() >= 1, ShapeError,
             "rows must be f32 [n, ...], got {}", rows.to_string());
  TRIB_CHECK((ids.dtype == DType::i32 || ids.dtype == DType::i64) && ids.shape.rank() == 1 &&
                 ids.shape.dims()[0] == rows.shape.dims()[0],
             ShapeError, "ids must be i32 or i64 [{}] (one per row), got {}", rows.shape.dims()[0],
             ids.to_string());
  bool fits = dense.rank() == rows.shape.rank();
  for (int a = 1; fits && a < dense.rank(); ++a) fits = dense.dims()[a] == rows.shape.dims()[a];
  TRIB_CHECK(fits, ShapeError, "rows {} do not fit the dense shape {}: all axes but the first must match",
             rows.shape.to_string(), dense.to_string());
}

class ScatterAddOp final : public Op {
 public:
  explicit ScatterAddOp(Shape dense) : dense_(std::move(dense)) {}
  std::string_view name() const override { return "scatter_add"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    check_rows_and_ids(in[0], in[1], dense_);
    return {{DType::f32, dense_}};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& rows = ctx.input(0);
    const std::vector<std::int64_t> ids = checked_ids(ctx.input(1), dense_.dims()[0]);
    Tensor& y = ctx.output_zeros(0);
    const std::int64_t d = dense_.dims()[0] == 0 ? 0 : dense_.numel() / dense_.dims()[0];
    const float* pr = rows.data<float>();
    float* py = y.data<float>();
    // Threads split the columns, not the rows: duplicate ids then never race, and each
    // element sums its rows in the same order whatever the thread count.
    kernels::parallel_for(d, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const float* src = pr + static_cast<std::int64_t>(i) * d;
        float* dst = py + ids[i] * d;
#pragma omp simd
        for (std::int64_t j = b; j < e; ++j) dst[j] += src[j];
      }
    }, static_cast<std::int64_t>(ids.size()));
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& rows = ctx.input(0);
    const std::vector<std::int64_t> ids = checked_ids(ctx.input(1), dense_.dims()[0]);
    Tensor& y = ctx.output_zeros(0);
    const std::int64_t d = rows.shape().dims()[0] == 0 ? 0 : rows.numel() / rows.shape().dims()[0];
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (std::int64_t j = 0; j < d; ++j)
        y.data<float>()[ids[i] * d + j] += rows.data<float>()[static_cast<std::int64_t>(i) * d + j];
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override;

 private:
  Shape dense_;
};

// rows[i] = table[ids[i]]: table [V, D...], ids [n] -> [n, D...].
class GatherRowsOp final : public Op {
 public:
  std::string_view name() const override { return "gather_rows"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[0].shape.rank() >= 1, ShapeError,
               "table must be f32 [V, ...], got {}", in[0].to_string());
    std::vector<std::int64_t> dims = in[0].shape.dims();
    dims[0] = in[1].shape.rank() == 1 ? in[1].shape.dims()[0] : 0;
    TensorSpec out{DType::f32, Shape(std::move(dims))};
    check_rows_and_ids(out, in[1], in[0].shape);
    return {out};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& table = ctx.input(0);
    const std::vector<std::int64_t> ids = checked_ids(ctx.input(1), table.shape().dims()[0]);
    Tensor& y = ctx.output(0);
    const std::int64_t d = ids.empty() ? 0 : y.numel() / static_cast<std::int64_t>(ids.size());
    const float* pt = table.data<float>();
    float* py = y.data<float>();
    const auto n = static_cast<std::int64_t>(ids.size());
    kernels::parallel_for(n, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) std::copy_n(pt + ids[i] * d, d, py + i * d);
    }, d);
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& table = ctx.input(0);
    const std::vector<std::int64_t> ids = checked_ids(ctx.input(1), table.shape().dims()[0]);
    Tensor& y = ctx.output(0);
    const std::int64_t d = ids.empty() ? 0 : y.numel() / static_cast<std::int64_t>(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (std::int64_t j = 0; j < d; ++j)
        y.data<float>()[static_cast<std::int64_t>(i) * d + j] = table.data<float>()[ids[i] * d + j];
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::scatter_add(ctx.graph, ctx.grad(), ctx.input(1), ctx.input_spec(0).shape), {}}, {}};
  }
};

std::vector<Gradient> ScatterAddOp::gradient(GradContext& ctx) const {
  Value rows = ctx.graph.add1(std::make_shared<GatherRowsOp>(), {ctx.grad(), ctx.input(1)});
  return {{rows, {}}, {}};
}

}  // namespace

Value ops::scatter_add(Graph& g, Value rows, Value ids, Shape dense_shape, const std::string& name) {
  return g.add1(std::make_shared<ScatterAddOp>(std::move(dense_shape)), {rows, ids}, name);
}

}  // namespace trib
