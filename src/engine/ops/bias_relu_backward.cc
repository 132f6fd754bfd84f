// The backward of a dense layer's fused bias and ReLU (matmul_bias_relu): from dy and the
// layer's output y [N, C], d = dy where y > 0 (ReLU's gradient) and the bias gradient
// db = d summed over the rows, in one pass instead of an activation backward then a sum.
// Threads split the columns, so each column's sum is added in row order whatever the
// thread count: the result does not depend on it.
#include <cstring>

#include "engine/kernels/parallel.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

using Floats = float __attribute__((vector_size(16)));
using Ints = std::int32_t __attribute__((vector_size(16)));
constexpr std::int64_t kBlock = 16;

// 16 columns of every row: d = dy where y > 0, and their sums. Vector types, because the
// compiler at -O2 leaves this loop (a select and a sum per element) scalar and branchy.
void block(const float* dy, const float* y, float* d, float* db, std::int64_t n, std::int64_t c) {
  Floats acc[4] = {};
  for (std::int64_t r = 0; r < n; ++r)
    for (int k = 0; k < 4; ++k) {
      Floats dyv, yv;
      std::memcpy(&dyv, dy + r * c + 4 * k, sizeof dyv);
      std::memcpy(&yv, y + r * c + 4 * k, sizeof yv);
      const Ints keep = yv > 0.0f;  // all ones where y > 0
      const Floats v = reinterpret_cast<Floats>(reinterpret_cast<Ints>(dyv) & keep);
      std::memcpy(d + r * c + 4 * k, &v, sizeof v);
      acc[k] += v;
    }
  for (int k = 0; k < 4; ++k) std::memcpy(db + 4 * k, &acc[k], sizeof acc[k]);
}

// The last `w` < 16 columns.
void tail(const float* dy, const float* y, float* d, float* db, std::int64_t n, std::int64_t c,
          std::int64_t w) {
  for (std::int64_t j = 0; j < w; ++j) db[j] = 0.0f;
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t j = 0; j < w; ++j) {
      const float v = y[r * c + j] > 0.0f ? dy[r * c + j] : 0.0f;
      d[r * c + j] = v;
      db[j] += v;
    }
}

class BiasReluBackwardOp final : public Op {
 public:
  std::string_view name() const override { return "bias_relu_backward"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[0].shape.rank() == 2 && in[1] == in[0], ShapeError,
               "bias_relu_backward needs f32 dy and y of one [N, C] shape, got {} and {}",
               in[0].to_string(), in[1].to_string());
    return {in[0], {DType::f32, Shape{in[0].shape[1]}}};
  }
  void compute(KernelContext& ctx) const override {
    const std::int64_t n = ctx.input_spec(0).shape[0], c = ctx.input_spec(0).shape[1];
    const float* dy = ctx.input(0).data<float>();
    const float* y = ctx.input(1).data<float>();
    float* d = ctx.output_reusing(0, 0).data<float>();
    float* db = ctx.output(1).data<float>();
    // Blocks of 16 columns (a cache line) split over the threads; within a block the sums
    // stay in registers while the rows go by.
    const std::int64_t blocks = (c + kBlock - 1) / kBlock;
    kernels::parallel_for(blocks, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t blk = b; blk < e; ++blk) {
        const std::int64_t j = blk * kBlock;
        if (j + kBlock <= c) block(dy + j, y + j, d + j, db + j, n, c);
        else tail(dy + j, y + j, d + j, db + j, n, c, c - j);
      }
    }, n * kBlock);
  }
  void reference(KernelContext& ctx) const override {
    const std::int64_t n = ctx.input_spec(0).shape[0], c = ctx.input_spec(0).shape[1];
    const float* dy = ctx.input(0).data<float>();
    const float* y = ctx.input(1).data<float>();
    float* d = ctx.output(0).data<float>();
    float* db = ctx.output(1).data<float>();
    for (std::int64_t j = 0; j < c; ++j) {
      double s = 0;
      for (std::int64_t r = 0; r < n; ++r) {
        d[r * c + j] = y[r * c + j] > 0.0f ? dy[r * c + j] : 0.0f;
        s += d[r * c + j];
      }
      db[j] = static_cast<float>(s);
    }
  }
};

}  // namespace

ops::backward::BiasReluGrads ops::backward::bias_relu(Graph& g, Value dy, Value y) {
  auto out = g.add(std::make_shared<BiasReluBackwardOp>(), {dy, y});
  return {out[0], out[1]};
}

}  // namespace trib
