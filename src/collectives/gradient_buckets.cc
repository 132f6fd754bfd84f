#include "collectives/gradient_buckets.h"

namespace trib::collectives {

BucketPlan::BucketPlan(const std::vector<update::GradTensor>& grads, std::size_t bucket_bytes) {
  slots_.resize(grads.size());
  const auto capacity = static_cast<std::int64_t>(bucket_bytes / sizeof(float));
  for (std::size_t k = grads.size(); k-- > 0;) {
    const update::GradTensor& g = grads[k];
    TRIB_CHECK(g.values.defined(), InvalidArgument, "allreduce strategy: gradient {} is missing", k);
    slots_[k].shape = g.values.shape();
    if (g.sparse()) {
      sparse_.insert(sparse_.begin(), k);
      continue;
    }
    TRIB_CHECK(g.values.dtype() == DType::f32, InvalidArgument,
               "allreduce strategy: gradient {} is {}; only f32 gradients can be averaged", k, g.values.spec_string());
    const std::int64_t n = g.values.numel();
    if (bucket_elements_.empty() || (bucket_elements_.back() > 0 && bucket_elements_.back() + n > capacity)) {
      bucket_elements_.push_back(0);
      bucket_members_.push_back(0);
    }
    slots_[k].bucket = buckets() - 1;
    slots_[k].offset = bucket_elements_.back();
    bucket_elements_.back() += n;
    bucket_members_.back() += 1;
  }
}

}  // namespace trib::collectives
