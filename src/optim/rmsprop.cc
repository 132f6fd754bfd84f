#include "trib/optim/rmsprop.h"

#include <cmath>

#include "optim/check_hyper.h"

namespace trib {
namespace {

struct RmsPropKernelArgs {
  float alpha, eps, mu, wd, lr;
};

// One loop per (centered, momentum) combination, chosen at compile time, so the inner loop has
// no branches and no reads of slots the configuration does not have.
template <bool kCentered, bool kMomentum>
void rmsprop_segment(float* p, float* sq, float* ga, float* buf, const float* g, std::int64_t len,
                     const RmsPropKernelArgs& a) {
#pragma omp simd
  for (std::int64_t i = 0; i < len; ++i) {
    const float gi = g[i] + a.wd * p[i];
    const float sqi = a.alpha * sq[i] + (1.0f - a.alpha) * gi * gi;
    sq[i] = sqi;
    float avg;
    if constexpr (kCentered) {
      const float gai = a.alpha * ga[i] + (1.0f - a.alpha) * gi;
      ga[i] = gai;
      avg = std::sqrt(sqi - gai * gai) + a.eps;
    } else {
      avg = std::sqrt(sqi) + a.eps;
    }
    if constexpr (kMomentum) {
      const float b = a.mu * buf[i] + gi / avg;
      buf[i] = b;
      p[i] -= a.lr * b;
    } else {
      p[i] -= a.lr * gi / avg;
    }
  }
}

template <bool kCentered, bool kMomentum>
void rmsprop_segments(float* p, float* sq, float* ga, float* buf, std::span<const std::int64_t> offsets,
                      const float* grad, std::int64_t len, const RmsPropKernelArgs& a) {
  for (std::size_t s = 0; s < offsets.size(); ++s) {
    const std::int64_t o = offsets[s];
    rmsprop_segment<kCentered, kMomentum>(p + o, sq + o, kCentered ? ga + o : nullptr,
                                          kMomentum ? buf + o : nullptr,
                                          grad + static_cast<std::int64_t>(s) * len, len, a);
  }
}

}  // namespace

RmsProp::RmsProp(RmsPropOptions options) : options_(options) {
  optim_detail::check_hyper("rmsprop", "alpha", options_.alpha, 0, 1);
  optim_detail::check_hyper("rmsprop", "eps", options_.eps, 0, optim_detail::kUnbounded);
  optim_detail::check_hyper("rmsprop", "momentum", options_.momentum, 0, 1);
  optim_detail::check_hyper("rmsprop", "weight_decay", options_.weight_decay, 0, optim_detail::kUnbounded);
}

void RmsProp::update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
                     const float* grad, std::int64_t len, SlotStore& slots, float lr) const {
  const bool centered = options_.centered;
  const bool momentum = options_.momentum > 0.0f;
  float* p = param.data<float>();
  float* sq = slots.get_or_create(var, "square_avg", DType::f32, param.shape()).data<float>();
  float* ga = centered ? slots.get_or_create(var, "grad_avg", DType::f32, param.shape()).data<float>() : nullptr;
  float* buf = momentum ? slots.get_or_create(var, "momentum", DType::f32, param.shape()).data<float>() : nullptr;
  const RmsPropKernelArgs a{options_.alpha, options_.eps, options_.momentum, options_.weight_decay, lr};
  if (centered && momentum) {
    rmsprop_segments<true, true>(p, sq, ga, buf, offsets, grad, len, a);
  } else if (centered) {
    rmsprop_segments<true, false>(p, sq, ga, buf, offsets, grad, len, a);
  } else if (momentum) {
    rmsprop_segments<false, true>(p, sq, ga, buf, offsets, grad, len, a);
  } else {
    rmsprop_segments<false, false>(p, sq, ga, buf, offsets, grad, len, a);
  }
}

}  // namespace trib
