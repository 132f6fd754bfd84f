#include "engine/kernels/window_geometry.h"

namespace trib::kernels {
namespace {

std::int64_t output_size(std::int64_t in, std::int64_t kernel, int stride, int pad,
                         const char* axis) {
  TRIB_CHECK(stride >= 1 && pad >= 0 && kernel >= 1, ShapeError,
             "{}: stride {} must be >= 1, padding {} >= 0 and kernel {} >= 1", axis, stride, pad,
             kernel);
  TRIB_CHECK(in + 2 * pad >= kernel, ShapeError,
             "{}: kernel {} is larger than the input {} plus padding 2 x {}", axis, kernel, in,
             pad);
  return (in + 2 * pad - kernel) / stride + 1;
}

}  // namespace

Conv2dGeometry conv2d_geometry(const Shape& x, const Shape& w, const ops::Conv2dOptions& opts) {
  TRIB_CHECK(x.rank() == 4 && w.rank() == 4, ShapeError,
             "conv2d needs x [N, C, H, W] and w [O, C, KH, KW], got x {} and w {}", x.to_string(),
             w.to_string());
  TRIB_CHECK(x[1] == w[1], ShapeError,
             "x has {} channels (x {}) but w expects {} input channels (w {})", x[1],
             x.to_string(), w[1], w.to_string());
  Conv2dGeometry g{};
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.o = w[0], g.kh = w[2], g.kw = w[3];
  g.stride_h = opts.stride_h, g.stride_w = opts.stride_w;
  g.pad_h = opts.pad_h, g.pad_w = opts.pad_w;
  g.oh = output_size(g.h, g.kh, opts.stride_h, opts.pad_h, "height");
  g.ow = output_size(g.w, g.kw, opts.stride_w, opts.pad_w, "width");
  return g;
}

Pool2dGeometry pool2d_geometry(const Shape& x, const ops::Pool2dOptions& opts) {
  TRIB_CHECK(x.rank() == 4, ShapeError, "pooling needs x [N, C, H, W], got {}", x.to_string());
  TRIB_CHECK(opts.pad_h < opts.kernel_h && opts.pad_w < opts.kernel_w, ShapeError,
             "padding {}x{} must be smaller than the kernel {}x{}", opts.pad_h, opts.pad_w,
             opts.kernel_h, opts.kernel_w);
  Pool2dGeometry g{};
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.kh = opts.kernel_h, g.kw = opts.kernel_w;
  g.stride_h = opts.stride_h, g.stride_w = opts.stride_w;
  g.pad_h = opts.pad_h, g.pad_w = opts.pad_w;
  g.oh = output_size(g.h, g.kh, opts.stride_h, opts.pad_h, "height");
  g.ow = output_size(g.w, g.kw, opts.stride_w, opts.pad_w, "width");
  return g;
}

}  // namespace trib::kernels
