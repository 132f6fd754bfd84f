#include "trib/optim/adam.h"

#include <cmath>

#include "optim/check_hyper.h"

namespace trib {

Adam::Adam(AdamOptions options) : Adam(options, false) {}

Adam::Adam(AdamOptions options, bool decoupled_decay) : options_(options), decoupled_decay_(decoupled_decay) {
  const char* who = decoupled_decay ? "adamw" : "adam";
  optim_detail::check_hyper(who, "beta1", options_.beta1, 0, 1);
  optim_detail::check_hyper(who, "beta2", options_.beta2, 0, 1);
  optim_detail::check_hyper(who, "eps", options_.eps, 0, optim_detail::kUnbounded);
  optim_detail::check_hyper(who, "weight_decay", options_.weight_decay, 0, optim_detail::kUnbounded);
}

void Adam::update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
                  const float* grad, std::int64_t len, SlotStore& slots, float lr) const {
  Tensor& m_t = slots.get_or_create(var, "m", DType::f32, param.shape());
  Tensor& v_t = slots.get_or_create(var, "v", DType::f32, param.shape());
  Tensor& step_t = slots.get_or_create(var, "step", DType::i64, Shape{});
  const std::int64_t t = ++*step_t.data<std::int64_t>();

  const float b1 = options_.beta1;
  const float b2 = options_.beta2;
  const float eps = options_.eps;
  // Bias corrections in double: beta^t underflows gracefully and 1 - beta^t keeps its digits.
  const double bc1 = 1.0 - std::pow(static_cast<double>(b1), static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(static_cast<double>(b2), static_cast<double>(t));
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float l2 = decoupled_decay_ ? 0.0f : options_.weight_decay;
  const float keep = decoupled_decay_ ? 1.0f - lr * options_.weight_decay : 1.0f;

  float* const pbase = param.data<float>();
  float* const mbase = m_t.data<float>();
  float* const vbase = v_t.data<float>();
  for (std::size_t s = 0; s < offsets.size(); ++s) {
    float* p = pbase + offsets[s];
    float* m = mbase + offsets[s];
    float* v = vbase + offsets[s];
    const float* g = grad + static_cast<std::int64_t>(s) * len;
#pragma omp simd
    for (std::int64_t i = 0; i < len; ++i) {
      const float gi = g[i] + l2 * p[i];
      const float mi = b1 * m[i] + (1.0f - b1) * gi;
      const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      // The same association as PyTorch: denom = sqrt(v) / sqrt(bc2) + eps.
      p[i] = p[i] * keep - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
    }
  }
}

}  // namespace trib
