// Sizes of the sliding-window ops (2-D convolution and pooling), worked out once from the
// input shapes and options and shared by each op, its backward ops and their oneDNN and
// reference kernels. Output size per axis: (in + 2 * pad - kernel) / stride + 1.
#pragma once

#include <cstdint>

#include "trib/engine/ops.h"

namespace trib::kernels {

struct Conv2dGeometry {
  std::int64_t n, c, h, w;  // x [N, C, H, W]
  std::int64_t o, kh, kw;   // weights [O, C, KH, KW]
  std::int64_t oh, ow;      // y [N, O, OH, OW]
  std::int64_t stride_h, stride_w, pad_h, pad_w;

  Shape x_shape() const { return Shape{n, c, h, w}; }
  Shape w_shape() const { return Shape{o, c, kh, kw}; }
  Shape y_shape() const { return Shape{n, o, oh, ow}; }
  // Multiply-adds of the forward (and of each backward) pass, padding taps included.
  double macs() const { return double(n) * double(o) * double(oh) * double(ow) * double(c) * double(kh) * double(kw); }
  // Estimated nanoseconds on one thread (Op::cost_ns): about 100 G multiply-adds a second.
  double cost_ns() const { return macs() * 0.01; }
};

// Throws ShapeError saying what does not fit: ranks, channel counts, strides, or a kernel
// larger than the padded image.
Conv2dGeometry conv2d_geometry(const Shape& x, const Shape& w, const ops::Conv2dOptions& opts);

struct Pool2dGeometry {
  std::int64_t n, c, h, w;  // x [N, C, H, W]
  std::int64_t kh, kw;
  std::int64_t oh, ow;      // y [N, C, OH, OW]
  std::int64_t stride_h, stride_w, pad_h, pad_w;

  Shape x_shape() const { return Shape{n, c, h, w}; }
  Shape y_shape() const { return Shape{n, c, oh, ow}; }
};

// Padding must be smaller than the kernel, so that every window holds at least one real cell.
Pool2dGeometry pool2d_geometry(const Shape& x, const ops::Pool2dOptions& opts);

}  // namespace trib::kernels
