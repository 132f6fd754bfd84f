#include "trib/optim/regularization.h"

namespace trib {

void add_l2_regularization(Tensor& grad, const Tensor& param, float weight_decay) {
  TRIB_CHECK(param.defined() && param.dtype() == DType::f32 && grad.defined() && grad.dtype() == DType::f32 &&
                 grad.shape() == param.shape(),
             InvalidArgument, "L2 regularisation: gradient {} does not match parameter {}", grad.spec_string(),
             param.spec_string());
  float* g = grad.data<float>();
  const float* p = param.data<float>();
  const std::int64_t n = grad.numel();
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) g[i] += weight_decay * p[i];
}

}  // namespace trib
