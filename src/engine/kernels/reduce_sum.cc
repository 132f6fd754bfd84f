#include "engine/kernels/reduce_sum.h"

#include <algorithm>
#include <array>

#include "engine/kernels/parallel.h"

namespace trib::kernels {
namespace {

// The input as alternating groups of kept and reduced axes: size-1 axes dropped, adjacent
// axes with the same role merged. [N, C, H, W] over {0, 2, 3} becomes [N | C | H*W].
struct Groups {
  std::vector<std::int64_t> dims, strides;
  std::vector<bool> reduced;
  std::vector<int> kept;           // indices of the kept groups
  std::vector<int> outer_reduced;  // of the reduced groups, except the innermost group
};

Groups collapse(const Shape& shape, const std::vector<bool>& reduce) {
  Groups g;
  for (int a = 0; a < shape.rank(); ++a) {
    const std::int64_t d = shape.dims()[a];
    if (d == 1) continue;
    if (!g.dims.empty() && g.reduced.back() == reduce[a]) {
      g.dims.back() *= d;
    } else {
      g.dims.push_back(d);
      g.reduced.push_back(reduce[a]);
    }
  }
  g.strides.assign(g.dims.size(), 1);
  for (int i = static_cast<int>(g.dims.size()) - 2; i >= 0; --i)
    g.strides[i] = g.strides[i + 1] * g.dims[i + 1];
  for (int i = 0; i < static_cast<int>(g.dims.size()); ++i) {
    if (!g.reduced[i]) g.kept.push_back(i);
    else if (i + 1 < static_cast<int>(g.dims.size())) g.outer_reduced.push_back(i);
  }
  return g;
}

// Offset in x of output element o (its position over the kept groups, listed in `groups`).
std::int64_t kept_offset(const Groups& g, const std::vector<int>& groups, std::int64_t o) {
  std::int64_t off = 0;
  for (int i = static_cast<int>(groups.size()) - 1; i >= 0; --i) {
    const int grp = groups[i];
    off += (o % g.dims[grp]) * g.strides[grp];
    o /= g.dims[grp];
  }
  return off;
}

// Calls f(offset) for every combination of the groups `groups` (an odometer).
template <typename F>
void for_each_combination(const Groups& g, const std::vector<int>& groups, F&& f) {
  std::int64_t total = 1;
  for (int grp : groups) total *= g.dims[grp];
  std::array<std::int64_t, Shape::kMaxRank> idx{};
  std::int64_t off = 0;
  for (std::int64_t n = 0; n < total; ++n) {
    f(off);
    for (int i = static_cast<int>(groups.size()) - 1; i >= 0; --i) {
      const int grp = groups[i];
      off += g.strides[grp];
      if (++idx[i] < g.dims[grp]) break;
      off -= idx[i] * g.strides[grp];
      idx[i] = 0;
    }
  }
}

// Four interleaved running sums, each vectorised: they hide the adder's latency, which
// bounds a single chain (every add waits for the previous one), and measured about twice
// as fast as one simd reduction.
float contiguous_sum(const float* x, std::int64_t n) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  const std::int64_t m = n / 4 * 4;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (std::int64_t i = 0; i < m; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  float s = (s0 + s1) + (s2 + s3);
  for (std::int64_t i = m; i < n; ++i) s += x[i];
  return s;
}

void add_row(float* acc, const float* x, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

// Splits [0, n) into as many blocks as threads can use; partial results are kept per block
// and combined in block order, so the sum does not depend on which thread ran which block.
std::int64_t block_count(std::int64_t n, std::int64_t cost_per_item, int threads) {
  constexpr std::int64_t kMinWorkPerBlock = 32 * 1024;
  return std::clamp<std::int64_t>(n * cost_per_item / kMinWorkPerBlock, 1, std::max(threads, 1));
}

// [R] -> scalar.
void sum_all(const float* x, std::int64_t n, float* y, float scale, int threads) {
  const std::int64_t blocks = block_count(n, 1, threads), size = (n + blocks - 1) / blocks;
  std::vector<float> partial(blocks, 0.0f);
  parallel_for(blocks, threads, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t k = b; k < e; ++k) {
      const std::int64_t lo = k * size, hi = std::min(n, lo + size);
      if (lo < hi) partial[k] = contiguous_sum(x + lo, hi - lo);
    }
  }, size);
  float s = 0.0f;
  for (float p : partial) s += p;
  *y = s * scale;
}

// [R, K] -> [K]: each block of rows is added into its own partial row.
void sum_leading(const float* x, std::int64_t rows, std::int64_t k, float* y, float scale,
                 int threads) {
  const std::int64_t blocks = block_count(rows, k, threads), size = (rows + blocks - 1) / blocks;
  std::vector<float> partial(static_cast<std::size_t>(blocks * k), 0.0f);
  parallel_for(blocks, threads, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t blk = b; blk < e; ++blk) {
      float* acc = partial.data() + blk * k;
      for (std::int64_t r = blk * size; r < std::min(rows, (blk + 1) * size); ++r) add_row(acc, x + r * k, k);
    }
  }, size * k);
  std::fill_n(y, k, 0.0f);
  for (std::int64_t blk = 0; blk < blocks; ++blk) add_row(y, partial.data() + blk * k, k);
#pragma omp simd
  for (std::int64_t i = 0; i < k; ++i) y[i] *= scale;
}

}  // namespace

void sum_axes(const float* x, const Shape& shape, const std::vector<bool>& reduce, float* y,
              float scale, int threads) {
  std::int64_t out_numel = 1;
  for (int a = 0; a < shape.rank(); ++a)
    if (!reduce[a]) out_numel *= shape.dims()[a];
  if (shape.numel() == 0) {
    std::fill_n(y, out_numel, 0.0f);
    return;
  }
  const Groups g = collapse(shape, reduce);
  const std::int64_t n = shape.numel();
  if (g.kept.size() == g.dims.size()) {  // nothing actually reduced: a scaled copy
    parallel_for(n, threads, [&](std::int64_t b, std::int64_t e) {
#pragma omp simd
      for (std::int64_t i = b; i < e; ++i) y[i] = x[i] * scale;
    });
    return;
  }
  if (g.dims.size() == 1) return sum_all(x, n, y, scale, threads);
  const std::int64_t inner = g.dims.back();
  if (g.reduced.back()) {
    // Innermost axes reduced: each output is a sum of contiguous runs ([rows, k] -> [rows]
    // is one run each; [N, C, HW] -> [C] is N runs each).
    parallel_for(out_numel, threads, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t o = b; o < e; ++o) {
        const float* base = x + kept_offset(g, g.kept, o);
        float s = 0.0f;
        auto add_run = [&](std::int64_t off) { s += contiguous_sum(base + off, inner); };
        for_each_combination(g, g.outer_reduced, add_run);
        y[o] = s * scale;
      }
    }, n / out_numel);
    return;
  }
  // Innermost axes kept: outputs are rows of `inner`, each a sum of input rows.
  const std::int64_t out_rows = out_numel / inner;
  if (out_rows == 1) return sum_leading(x, n / inner, inner, y, scale, threads);
  std::vector<int> outer_kept(g.kept.begin(), g.kept.end() - 1);
  parallel_for(out_rows, threads, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t o = b; o < e; ++o) {
      const float* base = x + kept_offset(g, outer_kept, o);
      float* acc = y + o * inner;
      std::fill_n(acc, inner, 0.0f);
      for_each_combination(g, g.outer_reduced, [&](std::int64_t off) { add_row(acc, base + off, inner); });
#pragma omp simd
      for (std::int64_t i = 0; i < inner; ++i) acc[i] *= scale;
    }
  }, n / out_rows);
}

void sum_axes_reference(const float* x, const Shape& shape, const std::vector<bool>& reduce,
                        float* y, float scale) {
  std::int64_t out_numel = 1;
  for (int a = 0; a < shape.rank(); ++a)
    if (!reduce[a]) out_numel *= shape.dims()[a];
  std::vector<double> acc(out_numel, 0.0);
  for (std::int64_t i = 0; i < shape.numel(); ++i) {
    // Unravel i, then ravel its kept coordinates into the output.
    std::int64_t rest = i, out = 0, out_stride = 1;
    for (int a = shape.rank() - 1; a >= 0; --a) {
      const std::int64_t d = shape.dims()[a], coord = rest % d;
      rest /= d;
      if (reduce[a]) continue;
      out += coord * out_stride;
      out_stride *= d;
    }
    acc[out] += x[i];
  }
  for (std::int64_t o = 0; o < out_numel; ++o) y[o] = static_cast<float>(acc[o] * scale);
}

}  // namespace trib::kernels
