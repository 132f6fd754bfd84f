#include "engine/kernels/pool_ref.h"

#include <algorithm>
#include <vector>

namespace trib::kernels {
namespace {

// The part of output cell (oy, ox)'s window that lies inside the image: [y0, y1) x [x0, x1).
struct Window {
  std::int64_t y0, y1, x0, x1;
  std::int64_t cells() const { return (y1 - y0) * (x1 - x0); }
};

Window window(const Pool2dGeometry& g, std::int64_t oy, std::int64_t ox) {
  std::int64_t ys = oy * g.stride_h - g.pad_h, xs = ox * g.stride_w - g.pad_w;
  return {std::max<std::int64_t>(ys, 0), std::min(ys + g.kh, g.h), std::max<std::int64_t>(xs, 0),
          std::min(xs + g.kw, g.w)};
}

// Calls f(plane, out_index, window) for every output cell; plane = n * C + c.
template <typename F>
void for_each_output(const Pool2dGeometry& g, F&& f) {
  for (std::int64_t p = 0; p < g.n * g.c; ++p)
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
      for (std::int64_t ox = 0; ox < g.ow; ++ox) f(p, (p * g.oh + oy) * g.ow + ox, window(g, oy, ox));
}

}  // namespace

void max_pool2d_forward_ref(const Pool2dGeometry& g, const float* x, float* y, std::int32_t* argmax) {
  for_each_output(g, [&](std::int64_t p, std::int64_t o, Window win) {
    const float* plane = x + p * g.h * g.w;
    std::int64_t best = win.y0 * g.w + win.x0;
    for (std::int64_t iy = win.y0; iy < win.y1; ++iy)
      for (std::int64_t ix = win.x0; ix < win.x1; ++ix)
        if (plane[iy * g.w + ix] > plane[best]) best = iy * g.w + ix;
    y[o] = plane[best];
    argmax[o] = static_cast<std::int32_t>(best);
  });
}

void max_pool2d_backward_ref(const Pool2dGeometry& g, const float* dy, const std::int32_t* argmax,
                             float* dx) {
  std::fill(dx, dx + g.x_shape().numel(), 0.0f);
  for_each_output(g, [&](std::int64_t p, std::int64_t o, Window) {
    dx[p * g.h * g.w + argmax[o]] += dy[o];
  });
}

void avg_pool2d_forward_ref(const Pool2dGeometry& g, const float* x, float* y) {
  for_each_output(g, [&](std::int64_t p, std::int64_t o, Window win) {
    const float* plane = x + p * g.h * g.w;
    double s = 0;
    for (std::int64_t iy = win.y0; iy < win.y1; ++iy)
      for (std::int64_t ix = win.x0; ix < win.x1; ++ix) s += plane[iy * g.w + ix];
    y[o] = static_cast<float>(s / double(win.cells()));
  });
}

void avg_pool2d_backward_ref(const Pool2dGeometry& g, const float* dy, float* dx) {
  std::vector<double> acc(static_cast<std::size_t>(g.x_shape().numel()), 0.0);
  for_each_output(g, [&](std::int64_t p, std::int64_t o, Window win) {
    double share = double(dy[o]) / double(win.cells());
    for (std::int64_t iy = win.y0; iy < win.y1; ++iy)
      for (std::int64_t ix = win.x0; ix < win.x1; ++ix) acc[(p * g.h + iy) * g.w + ix] += share;
  });
  for (std::size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<float>(acc[i]);
}

}  // namespace trib::kernels
