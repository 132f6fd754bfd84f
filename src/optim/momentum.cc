#include "trib/optim/momentum.h"

#include "optim/check_hyper.h"

namespace trib {
namespace {

// Nesterov or not is chosen at compile time, so the inner loop has no branch to block
// vectorisation.
template <bool kNesterov>
void momentum_segments(float* pbase, float* bbase, std::span<const std::int64_t> offsets, const float* grad,
                       std::int64_t len, float mu, float wd, float lr) {
  for (std::size_t s = 0; s < offsets.size(); ++s) {
    float* p = pbase + offsets[s];
    float* buf = bbase + offsets[s];
    const float* g = grad + static_cast<std::int64_t>(s) * len;
#pragma omp simd
    for (std::int64_t i = 0; i < len; ++i) {
      const float gi = g[i] + wd * p[i];
      const float b = mu * buf[i] + gi;
      buf[i] = b;
      p[i] -= lr * (kNesterov ? gi + mu * b : b);
    }
  }
}

}  // namespace

Momentum::Momentum(MomentumOptions options) : options_(options) {
  optim_detail::check_hyper("momentum", "momentum", options_.momentum, 0, 1);
  optim_detail::check_hyper("momentum", "weight_decay", options_.weight_decay, 0, optim_detail::kUnbounded);
}

void Momentum::update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
                      const float* grad, std::int64_t len, SlotStore& slots, float lr) const {
  // A zero buffer makes the first step buf = g, which is how PyTorch starts it.
  Tensor& buf_t = slots.get_or_create(var, "momentum", DType::f32, param.shape());
  float* p = param.data<float>();
  float* buf = buf_t.data<float>();
  if (options_.nesterov) {
    momentum_segments<true>(p, buf, offsets, grad, len, options_.momentum, options_.weight_decay, lr);
  } else {
    momentum_segments<false>(p, buf, offsets, grad, len, options_.momentum, options_.weight_decay, lr);
  }
}

}  // namespace trib
