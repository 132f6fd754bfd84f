#include "trib/optim/sgd.h"

#include "optim/check_hyper.h"

namespace trib {

Sgd::Sgd(SgdOptions options) : options_(options) {
  optim_detail::check_hyper("sgd", "weight_decay", options_.weight_decay, 0, optim_detail::kUnbounded);
}

void Sgd::update(const std::string&, Tensor& param, std::span<const std::int64_t> offsets, const float* grad,
                 std::int64_t len, SlotStore&, float lr) const {
  float* const base = param.data<float>();
  const float wd = options_.weight_decay;
  for (std::size_t s = 0; s < offsets.size(); ++s) {
    float* p = base + offsets[s];
    const float* g = grad + static_cast<std::int64_t>(s) * len;
#pragma omp simd
    for (std::int64_t i = 0; i < len; ++i) p[i] -= lr * (g[i] + wd * p[i]);
  }
}

}  // namespace trib
