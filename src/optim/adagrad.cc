#include "trib/optim/adagrad.h"

#include <cmath>

#include "optim/check_hyper.h"

namespace trib {

Adagrad::Adagrad(AdagradOptions options) : options_(options) {
  optim_detail::check_hyper("adagrad", "eps", options_.eps, 0, optim_detail::kUnbounded);
  optim_detail::check_hyper("adagrad", "initial_accumulator", options_.initial_accumulator, 0,
                            optim_detail::kUnbounded);
  optim_detail::check_hyper("adagrad", "weight_decay", options_.weight_decay, 0, optim_detail::kUnbounded);
}

void Adagrad::update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
                     const float* grad, std::int64_t len, SlotStore& slots, float lr) const {
  Tensor& sum_t = slots.get_or_create(var, "sum", DType::f32, param.shape(), options_.initial_accumulator);
  float* const pbase = param.data<float>();
  float* const sbase = sum_t.data<float>();
  const float eps = options_.eps;
  const float wd = options_.weight_decay;
  for (std::size_t s = 0; s < offsets.size(); ++s) {
    float* p = pbase + offsets[s];
    float* sum = sbase + offsets[s];
    const float* g = grad + static_cast<std::int64_t>(s) * len;
#pragma omp simd
    for (std::int64_t i = 0; i < len; ++i) {
      const float gi = g[i] + wd * p[i];
      const float si = sum[i] + gi * gi;
      sum[i] = si;
      p[i] -= lr * gi / (std::sqrt(si) + eps);
    }
  }
}

}  // namespace trib
