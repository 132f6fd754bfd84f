// Naive reference convolutions: direct loops with double accumulators, the ground truth the
// oneDNN kernels are tested against. Plain layouts: x NCHW, w OIHW, y NCHW.
#pragma once

#include "engine/kernels/window_geometry.h"

namespace trib::kernels {

void conv2d_forward_ref(const Conv2dGeometry& g, const float* x, const float* w, float* y);
void conv2d_backward_data_ref(const Conv2dGeometry& g, const float* dy, const float* w, float* dx);
void conv2d_backward_weights_ref(const Conv2dGeometry& g, const float* x, const float* dy,
                                 float* dw);

}  // namespace trib::kernels
