// Splitting loops over the intra-op threads. OpenMP, because oneDNN in Debian uses its
// OpenMP runtime too and the two then share one team of threads instead of fighting.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace trib::kernels {

// Calls body(begin, end) over [0, n) in contiguous chunks, one per thread. Runs inline when
// the work (n * cost_per_item, roughly in cycles) is too small to repay waking threads.
template <typename Body>
void parallel_for(std::int64_t n, int threads, Body&& body, std::int64_t cost_per_item = 1) {
  if (n <= 0) return;
  constexpr std::int64_t kMinWorkPerThread = 32 * 1024;
  std::int64_t useful = std::max<std::int64_t>(1, n * cost_per_item / kMinWorkPerThread);
  int t = static_cast<int>(std::min<std::int64_t>({threads, useful, n}));
  if (t <= 1) {
    body(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    int id = omp_get_thread_num(), nt = omp_get_num_threads();
    std::int64_t chunk = (n + nt - 1) / nt;
    std::int64_t b = std::min(n, id * chunk), e = std::min(n, b + chunk);
    if (b < e) body(b, e);
  }
}

}  // namespace trib::kernels
