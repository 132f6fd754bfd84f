#include "trib/optim/clip.h"

#include <cmath>

namespace trib {

double global_norm(std::span<const Tensor> tensors) {
  double sum = 0.0;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    TRIB_CHECK(tensors[t].defined() && tensors[t].dtype() == DType::f32, InvalidArgument,
               "global norm: tensor {} is {}, expected f32", t, tensors[t].spec_string());
    const float* x = tensors[t].data<float>();
    const std::int64_t n = tensors[t].numel();
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
    sum += s;
  }
  return std::sqrt(sum);
}

double clip_by_global_norm(std::span<Tensor> grads, double max_norm) {
  TRIB_CHECK(max_norm > 0, InvalidArgument, "clip_by_global_norm: max_norm = {} must be positive", max_norm);
  const double norm = global_norm(grads);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const float scale = static_cast<float>(max_norm / norm);
  for (Tensor& g : grads) {
    float* x = g.data<float>();
    const std::int64_t n = g.numel();
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) x[i] *= scale;
  }
  return norm;
}

}  // namespace trib
