// A pipeline stage's sum of its micro-batch gradients over one step, divided by their count
// at the flush: the batch's mean gradient. Sparse gradients (embedding rows) are summed by
// concatenating their rows and indices. The planner's calibration times the same sum, since
// a stage runs it once per micro-batch (a dense layer's is a memory-bound pass over its
// weights' size).
#pragma once

#include <vector>

#include "trib/update/grad_tensor.h"

namespace trib::pipeline {

class GradientSum {
 public:
  // Adds one micro-batch's gradients (the first ones are taken over, not copied, when
  // nothing else holds their memory).
  void add(std::vector<update::GradTensor>& grads);
  // The sum divided by `count`; leaves this empty.
  std::vector<update::GradTensor> mean(int count);

 private:
  std::vector<update::GradTensor> sum_;
  std::vector<std::vector<update::GradTensor>> sparse_parts_;
};

}  // namespace trib::pipeline
