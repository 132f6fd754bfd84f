// softmax_cross_entropy: the mean over the batch of -log softmax(logits)[label], fused into
// one pass per row with log-sum-exp so large logits never overflow; and its backward op,
// (softmax - onehot) / N, which recomputes the softmax from the logits rather than keeping
// an [N, C] tensor alive between forward and backward.
#include <cmath>
#include <vector>

#include "engine/kernels/parallel.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

std::int64_t label_at(const Tensor& labels, std::int64_t i) {
  return labels.dtype() == DType::i32 ? labels.data<std::int32_t>()[i]
                                      : labels.data<std::int64_t>()[i];
}

// Run-time check: labels come from data, so they cannot be checked when the graph is built.
void check_labels(const Tensor& labels, std::int64_t classes) {
  for (std::int64_t i = 0; i < labels.numel(); ++i) {
    std::int64_t l = label_at(labels, i);
    TRIB_CHECK(l >= 0 && l < classes, InvalidArgument,
               "label {} at position {} is outside [0, {}), the {} classes of the logits", l, i,
               classes, classes);
  }
}

void check_logits_labels(std::span<const TensorSpec> in) {
  const TensorSpec& logits = in[0];
  const TensorSpec& labels = in[1];
  TRIB_CHECK(logits.dtype == DType::f32 && logits.shape.rank() == 2 && logits.shape[0] >= 1 &&
                 logits.shape[1] >= 1,
             ShapeError, "logits must be f32 [N, C] with N, C >= 1, got {}", logits.to_string());
  TRIB_CHECK((labels.dtype == DType::i32 || labels.dtype == DType::i64) &&
                 labels.shape == Shape{logits.shape[0]},
             ShapeError, "labels must be i32 or i64 [{}] to match logits {}, got {}",
             logits.shape[0], logits.to_string(), labels.to_string());
}

// log(sum(exp(row))), shifted by the row's maximum.
float log_sum_exp(const float* row, std::int64_t c) {
  float mx = row[0];
  for (std::int64_t i = 1; i < c; ++i) mx = std::max(mx, row[i]);
  float s = 0.0f;
  for (std::int64_t i = 0; i < c; ++i) s += std::exp(row[i] - mx);
  return mx + std::log(s);
}

double log_sum_exp_ref(const float* row, std::int64_t c) {
  double mx = row[0], s = 0;
  for (std::int64_t i = 1; i < c; ++i) mx = std::max<double>(mx, row[i]);
  for (std::int64_t i = 0; i < c; ++i) s += std::exp(row[i] - mx);
  return mx + std::log(s);
}

class SoftmaxCrossEntropyOp final : public Op {
 public:
  std::string_view name() const override { return "softmax_cross_entropy"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    check_logits_labels(in);
    return {TensorSpec{DType::f32, Shape{}}};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& logits = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    const std::int64_t n = logits.shape()[0], c = logits.shape()[1];
    check_labels(labels, c);
    const float* x = logits.data<float>();
    std::vector<float> row_loss(static_cast<std::size_t>(n));
    kernels::parallel_for(n, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t r = b; r < e; ++r)
        row_loss[r] = log_sum_exp(x + r * c, c) - x[r * c + label_at(labels, r)];
    }, c * 8);
    // Summed in order, in double: the loss does not depend on the thread count.
    double total = 0;
    for (float l : row_loss) total += l;
    ctx.output(0).data<float>()[0] = static_cast<float>(total / double(n));
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& logits = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    const std::int64_t n = logits.shape()[0], c = logits.shape()[1];
    check_labels(labels, c);
    const float* x = logits.data<float>();
    double total = 0;
    for (std::int64_t r = 0; r < n; ++r)
      total += log_sum_exp_ref(x + r * c, c) - x[r * c + label_at(labels, r)];
    ctx.output(0).data<float>()[0] = static_cast<float>(total / double(n));
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    Value d = ops::backward::softmax_cross_entropy(ctx.graph, ctx.input(0), ctx.input(1), ctx.grad());
    return {{d, {}}, Gradient{}};
  }
};

// Inputs (logits, labels, dloss) -> dlogits = (softmax(logits) - onehot(labels)) * dloss / N.
class SoftmaxCrossEntropyBackwardOp final : public Op {
 public:
  std::string_view name() const override { return "softmax_cross_entropy_backward"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    check_logits_labels(in);
    TRIB_CHECK(in[2].dtype == DType::f32 && in[2].shape.numel() == 1, ShapeError,
               "the loss gradient must be one f32, got {}", in[2].to_string());
    return {in[0]};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& labels = ctx.input(1);
    const std::int64_t n = ctx.input(0).shape()[0], c = ctx.input(0).shape()[1];
    check_labels(labels, c);
    const float* x = ctx.input(0).data<float>();
    const float scale = ctx.input(2).data<float>()[0] / static_cast<float>(n);
    float* dx = ctx.output(0).data<float>();
    kernels::parallel_for(n, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t r = b; r < e; ++r) {
        const float* row = x + r * c;
        float* drow = dx + r * c;
        // softmax = exp(x - max) / sum: one exponential per element.
        float mx = row[0];
        for (std::int64_t i = 1; i < c; ++i) mx = std::max(mx, row[i]);
        float sum = 0.0f;
        for (std::int64_t i = 0; i < c; ++i) sum += (drow[i] = std::exp(row[i] - mx));
        const float k = scale / sum;
        for (std::int64_t i = 0; i < c; ++i) drow[i] *= k;
        drow[label_at(labels, r)] -= scale;
      }
    }, c * 16);
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& labels = ctx.input(1);
    const std::int64_t n = ctx.input(0).shape()[0], c = ctx.input(0).shape()[1];
    check_labels(labels, c);
    const float* x = ctx.input(0).data<float>();
    const double g = ctx.input(2).data<float>()[0];
    float* dx = ctx.output(0).data<float>();
    for (std::int64_t r = 0; r < n; ++r) {
      const double lse = log_sum_exp_ref(x + r * c, c);
      for (std::int64_t i = 0; i < c; ++i) {
        double onehot = i == label_at(labels, r) ? 1.0 : 0.0;
        dx[r * c + i] = static_cast<float>((std::exp(x[r * c + i] - lse) - onehot) * g / double(n));
      }
    }
  }
};

}  // namespace

Value ops::softmax_cross_entropy(Graph& g, Value logits, Value labels, const std::string& name) {
  return g.add1(std::make_shared<SoftmaxCrossEntropyOp>(), {logits, labels}, name);
}

Value ops::backward::softmax_cross_entropy(Graph& g, Value logits, Value labels, Value dloss) {
  return g.add1(std::make_shared<SoftmaxCrossEntropyBackwardOp>(), {logits, labels, dloss});
}

}  // namespace trib
