// Runs a body over the innermost runs of a StridedLoop, split across the intra-op threads.
// The body sees one contiguous run of the output and where each operand's run starts; the
// operands' inner strides (0 or 1) are fixed for the whole loop, so the body picks its
// vectorised variant once per run, not per element.
#pragma once

#include <array>
#include <cstdint>

#include "engine/kernels/broadcast_index.h"
#include "engine/kernels/parallel.h"

namespace trib::kernels {

// Where each of N operands' run starts, in elements.
template <std::size_t N>
using Offsets = std::array<std::int64_t, N>;

// body(out_begin, offsets, count): output elements [out_begin, out_begin + count) read the
// operands from offsets[k] on, stepping by loop.strides[k].back().
template <std::size_t N, typename Body>
void for_each_run(const StridedLoop& loop, int threads, Body&& body) {
  const std::int64_t inner = loop.inner();
  if (loop.dims.size() == 1) {
    // One axis: split the run itself, so same-shape and scalar cases use every thread.
    parallel_for(inner, threads, [&](std::int64_t b, std::int64_t e) {
      Offsets<N> off;
      for (std::size_t k = 0; k < N; ++k) off[k] = b * loop.strides[k][0];
      body(b, off, e - b);
    });
    return;
  }
  const int outer_rank = static_cast<int>(loop.dims.size()) - 1;
  parallel_for(loop.rows(), threads, [&](std::int64_t b, std::int64_t e) {
    // Position of row b on the outer axes, then an odometer from there: no division per row.
    std::array<std::int64_t, 8> idx{};
    Offsets<N> off{};
    std::int64_t rest = b;
    for (int a = outer_rank - 1; a >= 0; --a) {
      idx[a] = rest % loop.dims[a];
      rest /= loop.dims[a];
      for (std::size_t k = 0; k < N; ++k) off[k] += idx[a] * loop.strides[k][a];
    }
    for (std::int64_t row = b; row < e; ++row) {
      body(row * inner, off, inner);
      for (int a = outer_rank - 1; a >= 0; --a) {
        for (std::size_t k = 0; k < N; ++k) off[k] += loop.strides[k][a];
        if (++idx[a] < loop.dims[a]) break;
        for (std::size_t k = 0; k < N; ++k) off[k] -= idx[a] * loop.strides[k][a];
        idx[a] = 0;
      }
    }
  }, inner);
}

}  // namespace trib::kernels
