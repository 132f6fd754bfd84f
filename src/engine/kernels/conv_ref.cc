#include "engine/kernels/conv_ref.h"

#include <vector>

namespace trib::kernels {
namespace {

// Calls f(x_index, w_index, y_index) for every (output cell, input channel, kernel
// tap) pair that lands inside the image; the three kernels differ only in what they add up.
template <typename F>
void for_each_tap(const Conv2dGeometry& g, F&& f) {
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.o; ++o)
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox)
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t ky = 0; ky < g.kh; ++ky)
              for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                std::int64_t iy = oy * g.stride_h - g.pad_h + ky;
                std::int64_t ix = ox * g.stride_w - g.pad_w + kx;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                f(((n * g.c + c) * g.h + iy) * g.w + ix, ((o * g.c + c) * g.kh + ky) * g.kw + kx,
                  ((n * g.o + o) * g.oh + oy) * g.ow + ox);
              }
}

void store(const std::vector<double>& acc, float* out) {
  for (std::size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<float>(acc[i]);
}

}  // namespace

void conv2d_forward_ref(const Conv2dGeometry& g, const float* x, const float* w, float* y) {
  std::vector<double> acc(static_cast<std::size_t>(g.y_shape().numel()), 0.0);
  for_each_tap(g, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    acc[yi] += double(x[xi]) * w[wi];
  });
  store(acc, y);
}

void conv2d_backward_data_ref(const Conv2dGeometry& g, const float* dy, const float* w, float* dx) {
  std::vector<double> acc(static_cast<std::size_t>(g.x_shape().numel()), 0.0);
  for_each_tap(g, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    acc[xi] += double(dy[yi]) * w[wi];
  });
  store(acc, dx);
}

void conv2d_backward_weights_ref(const Conv2dGeometry& g, const float* x, const float* dy,
                                 float* dw) {
  std::vector<double> acc(static_cast<std::size_t>(g.w_shape().numel()), 0.0);
  for_each_tap(g, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    acc[wi] += double(x[xi]) * dy[yi];
  });
  store(acc, dw);
}

}  // namespace trib::kernels
