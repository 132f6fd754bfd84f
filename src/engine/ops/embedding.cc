// embedding: rows of a table [V, D] picked by integer ids of any shape -> ids.shape + [D].
// Its gradient with respect to the table is sparse, the output gradient's rows plus the ids
// they came from, so a large vocabulary never gets a dense [V, D] gradient per step.
#include <cstring>

#include "engine/kernels/parallel.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

std::int64_t id_at(const Tensor& ids, std::int64_t i) {
  return ids.dtype() == DType::i32 ? ids.data<std::int32_t>()[i] : ids.data<std::int64_t>()[i];
}

// Run-time check: ids come from data. Done before any row is copied.
void check_ids(const Tensor& ids, std::int64_t rows) {
  for (std::int64_t i = 0; i < ids.numel(); ++i) {
    std::int64_t id = id_at(ids, i);
    TRIB_CHECK(id >= 0 && id < rows, InvalidArgument,
               "id {} at position {} is outside the table's rows [0, {})", id, i, rows);
  }
}

void check_ids_spec(const TensorSpec& ids) {
  TRIB_CHECK(ids.dtype == DType::i32 || ids.dtype == DType::i64, ShapeError,
             "ids must be i32 or i64, got {}", ids.to_string());
}

class EmbeddingOp final : public Op {
 public:
  std::string_view name() const override { return "embedding"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[0].shape.rank() == 2, ShapeError,
               "the table must be f32 [V, D], got {}", in[0].to_string());
    check_ids_spec(in[1]);
    std::vector<std::int64_t> dims = in[1].shape.dims();
    dims.push_back(in[0].shape[1]);
    return {{DType::f32, Shape(std::move(dims))}};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& table = ctx.input(0);
    const Tensor& ids = ctx.input(1);
    check_ids(ids, table.shape()[0]);
    const std::int64_t d = table.shape()[1];
    const float* src = table.data<float>();
    float* dst = ctx.output(0).data<float>();
    kernels::parallel_for(ids.numel(), ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i)
        std::memcpy(dst + i * d, src + id_at(ids, i) * d, static_cast<std::size_t>(d) * sizeof(float));
    }, d);
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& table = ctx.input(0);
    const Tensor& ids = ctx.input(1);
    check_ids(ids, table.shape()[0]);
    const std::int64_t d = table.shape()[1];
    float* dst = ctx.output(0).data<float>();
    for (std::int64_t i = 0; i < ids.numel(); ++i)
      for (std::int64_t j = 0; j < d; ++j) dst[i * d + j] = table.data<float>()[id_at(ids, i) * d + j];
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    const TensorSpec& ids = ctx.input_spec(1);
    const std::int64_t n = ids.shape.numel(), d = ctx.input_spec(0).shape[1];
    Value rows = ctx.grad();
    if (ids.shape.rank() != 1) rows = ops::reshape(ctx.graph, rows, Shape{n, d});
    return {{rows, ops::backward::embedding_indices(ctx.graph, ctx.input(1))}, Gradient{}};
  }
};

// ids of any shape -> i64 [n]; a view when they are already i64.
class EmbeddingIndicesOp final : public Op {
 public:
  std::string_view name() const override { return "embedding_indices"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    check_ids_spec(in[0]);
    return {{DType::i64, Shape{in[0].shape.numel()}}};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& ids = ctx.input(0);
    if (ids.dtype() == DType::i64) return ctx.set_output(0, ids.reshape(Shape{ids.numel()}));
    reference(ctx);
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& ids = ctx.input(0);
    std::int64_t* out = ctx.output(0).data<std::int64_t>();
    for (std::int64_t i = 0; i < ids.numel(); ++i) out[i] = id_at(ids, i);
  }
  std::vector<Gradient> gradient(GradContext&) const override { return {}; }
};

}  // namespace

Value ops::embedding(Graph& g, Value table, Value ids, const std::string& name) {
  return g.add1(std::make_shared<EmbeddingOp>(), {table, ids}, name);
}

Value ops::backward::embedding_indices(Graph& g, Value ids) {
  return g.add1(std::make_shared<EmbeddingIndicesOp>(), {ids});
}

}  // namespace trib
