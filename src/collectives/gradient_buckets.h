// Where each gradient goes in the allreduce strategy: dense gradients are packed, last
// parameter first (the order backprop produces them), into fusion buckets of at most
// `bucket_bytes` (a larger gradient gets a bucket of its own); sparse gradients are
// exchanged one by one after the buckets. The same gradients give the same plan on every
// worker, which is what keeps their collectives in step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trib/update/grad_tensor.h"

namespace trib::collectives {

struct BucketSlot {
  int bucket = -1;          // -1: sparse, exchanged on its own
  std::int64_t offset = 0;  // first element within the bucket
  Shape shape;
};

class BucketPlan {
 public:
  BucketPlan() = default;
  // Throws InvalidArgument naming a dense gradient that is not f32.
  BucketPlan(const std::vector<update::GradTensor>& grads, std::size_t bucket_bytes);

  bool empty() const { return slots_.empty(); }
  std::size_t parameters() const { return slots_.size(); }
  const BucketSlot& slot(std::size_t parameter) const { return slots_[parameter]; }
  int buckets() const { return static_cast<int>(bucket_elements_.size()); }
  std::int64_t bucket_elements(int b) const { return bucket_elements_[static_cast<std::size_t>(b)]; }
  // Dense gradients in bucket b.
  int bucket_members(int b) const { return bucket_members_[static_cast<std::size_t>(b)]; }
  // Sparse parameters, ascending: exchanged in this order after every bucket.
  const std::vector<std::size_t>& sparse() const { return sparse_; }

 private:
  std::vector<BucketSlot> slots_;
  std::vector<std::int64_t> bucket_elements_;
  std::vector<int> bucket_members_;
  std::vector<std::size_t> sparse_;
};

}  // namespace trib::collectives
