// Naive reference pooling on NCHW tensors, the ground truth for the oneDNN kernels. Max
// pooling's reference workspace is, per output cell, the index (iy * W + ix) within its
// image plane of the first maximum of its window.
#pragma once

#include <cstdint>

#include "engine/kernels/window_geometry.h"

namespace trib::kernels {

void max_pool2d_forward_ref(const Pool2dGeometry& g, const float* x, float* y, std::int32_t* argmax);
void max_pool2d_backward_ref(const Pool2dGeometry& g, const float* dy, const std::int32_t* argmax,
                             float* dx);
// Averages over the window's cells inside the image only.
void avg_pool2d_forward_ref(const Pool2dGeometry& g, const float* x, float* y);
void avg_pool2d_backward_ref(const Pool2dGeometry& g, const float* dy, float* dx);

}  // namespace trib::kernels
