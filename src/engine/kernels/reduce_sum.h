// Summing a tensor over some of its axes: the kernel behind sum, mean, sum_to and the bias
// gradient. The kept axes are written in their original order, so the result is both the
// reduced shape and its keepdims form.
#pragma once

#include <cstdint>
#include <vector>

#include "trib/core/shape.h"

namespace trib::kernels {

// y[kept] = scale * sum over reduced axes of x. `reduce` has one flag per axis of `shape`.
// Fast paths: everything, the trailing axes ([rows, k] -> [rows]), the leading axes
// ([k, cols] -> [cols]) and the outer-and-inner pattern of a bias gradient ([N, C, HW]).
void sum_axes(const float* x, const Shape& shape, const std::vector<bool>& reduce, float* y,
              float scale, int threads);

// The same by visiting each element once, accumulating in double.
void sum_axes_reference(const float* x, const Shape& shape, const std::vector<bool>& reduce,
                        float* y, float scale);

}  // namespace trib::kernels
