// dropout: while training, zeroes each element with probability `rate` and scales the rest by
// 1 / (1 - rate); the identity at inference. Element i's fate is a pure function of (seed,
// step, i): word i % 4 of the Philox block i / 4 under a key derived from (seed, step). So no
// mask is stored: the gradient is the same op applied to dy, which within one executor run
// (one step) drops exactly the elements the forward dropped.
#include <cmath>

#include "engine/kernels/parallel.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

class DropoutOp final : public Op {
 public:
  DropoutOp(float rate, std::uint64_t seed)
      : rate_(rate), seed_(seed), scale_(1.0f / (1.0f - rate)),
        // Kept when the word is >= threshold: probability 1 - threshold / 2^32 ~ 1 - rate.
        threshold_(static_cast<std::uint32_t>(std::min(std::ldexp(double(rate), 32), 4294967295.0))) {}
  std::string_view name() const override { return "dropout"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "dropout needs f32, got {}", in[0].to_string());
    return {in[0]};
  }
  void compute(KernelContext& ctx) const override {
    if (!active(ctx)) return ctx.set_output(0, ctx.input(0));
    const float* x = ctx.input(0).data<float>();
    float* y = ctx.output_reusing(0, 0).data<float>();
    const std::int64_t n = ctx.input(0).numel();
    const std::uint64_t key = step_key(ctx.step());
    // Parallel over whole Philox blocks, so each block is drawn once.
    kernels::parallel_for((n + 3) / 4, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t blk = b; blk < e; ++blk) {
        auto words = Rng::block(key, static_cast<std::uint64_t>(blk));
        std::int64_t i0 = blk * 4, i1 = std::min(n, i0 + 4);
        for (std::int64_t i = i0; i < i1; ++i) y[i] = words[i - i0] >= threshold_ ? x[i] * scale_ : 0.0f;
      }
    }, 64);
  }
  void reference(KernelContext& ctx) const override {
    if (!active(ctx)) return ctx.set_output(0, ctx.input(0));
    const float* x = ctx.input(0).data<float>();
    float* y = ctx.output(0).data<float>();
    const std::uint64_t key = step_key(ctx.step());
    for (std::int64_t i = 0; i < ctx.input(0).numel(); ++i) {
      std::uint32_t word = Rng::block(key, static_cast<std::uint64_t>(i / 4))[i % 4];
      y[i] = word >= threshold_ ? x[i] / (1.0f - rate_) : 0.0f;
    }
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::dropout(ctx.graph, ctx.grad(), rate_, seed_), {}}};
  }

 private:
  bool active(const KernelContext& ctx) const { return ctx.training() && rate_ > 0.0f; }
  // A fresh, independent Philox stream per step.
  std::uint64_t step_key(std::uint64_t step) const { return Rng(seed_).fork(step).state().seed; }

  float rate_;
  std::uint64_t seed_;
  float scale_;
  std::uint32_t threshold_;
};

}  // namespace

Value ops::dropout(Graph& g, Value x, float rate, std::uint64_t seed, const std::string& name) {
  TRIB_CHECK(rate >= 0.0f && rate < 1.0f, InvalidArgument, "dropout '{}': rate {} must be in [0, 1)",
             name.empty() ? "(unnamed)" : name, rate);
  return g.add1(std::make_shared<DropoutOp>(rate, seed), {x}, name);
}

}  // namespace trib
