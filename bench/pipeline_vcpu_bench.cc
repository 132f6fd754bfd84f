// Do this machine's two vCPUs slow each other? The question behind pipeline_bench's bound
// (docs/model_parallel.md, "Two vCPUs"): two stages' CPU time per step swung between runs.
// Fixed work, timed in the thread's CPU time (which excludes waits for a core), run alone on
// vCPU 0, alone on vCPU 1, and as a pair at once (one copy pinned to each), rounds interleaved:
//   bench=pipeline_vcpu kernel=K mode=alone_cpu0|alone_cpu1|pair cpu_ms=T wall_ms=W [other_cpu_ms=T1]
// Kernels: fma_regs (10 independent FMA chains in registers: compute-bound, both FMA pipes
// full; two SMT siblings of one core would each run it at about half speed as a pair),
// sum_4mb (y += x over 4 MB arrays, the micro-batch gradient sum's pattern: cache-bound),
// sum_64mb (the same over 64 MB: memory-bound).
//   pipeline_vcpu_bench [rounds=5]
// Without hardware counters (this VM exposes no PMU: perf stat reports cycles and instructions
// as not supported), fixed work's CPU time is the proxy for its IPC at a fixed clock.
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

double seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(cpu), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

volatile float sink;

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void fma_regs() {
  const __m256 m = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
  __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2), a3 = _mm256_set1_ps(3),
         a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5), a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7),
         a8 = _mm256_set1_ps(8), a9 = _mm256_set1_ps(9);
  for (long it = 0; it < 100'000'000; ++it) {
    a0 = _mm256_fmadd_ps(a0, m, c), a1 = _mm256_fmadd_ps(a1, m, c), a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c), a4 = _mm256_fmadd_ps(a4, m, c), a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c), a7 = _mm256_fmadd_ps(a7, m, c), a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c);
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)), _mm256_add_ps(a8, a9)));
  float out[8];
  _mm256_storeu_ps(out, s);
  sink = out[0];
}
#else
void fma_regs() {
  float a[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (long it = 0; it < 400'000'000; ++it)
    for (float& x : a) x = x * 0.9999f + 1e-4f;
  sink = a[0] + a[9];
}
#endif

void sum(std::vector<float>& y, const std::vector<float>& x, int reps) {
  for (int r = 0; r < reps; ++r)
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
  sink = y[7];
}

struct Kernel {
  const char* name;
  std::size_t floats;  // 0: fma_regs
  int reps;
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  if (std::thread::hardware_concurrency() < 2) {
    fmt::print(stderr, "pipeline_vcpu_bench: needs 2 CPUs, this machine has {}\n", std::thread::hardware_concurrency());
    return 2;
  }
  const std::vector<Kernel> kernels{{"fma_regs", 0, 0}, {"sum_4mb", 1 << 20, 150}, {"sum_64mb", 16 << 20, 10}};
  for (int r = 0; r < rounds; ++r)
    for (const Kernel& k : kernels)
      for (const std::string mode : {"alone_cpu0", "alone_cpu1", "pair"}) {
        const bool pair = mode == "pair";
        std::atomic<int> ready{0};
        double cpu_ms[2] = {0, 0}, wall_ms[2] = {0, 0};
        auto body = [&](int cpu) {
          pin(cpu);
          std::vector<float> y(k.floats ? k.floats : 1, 1.f), x(k.floats ? k.floats : 1, 2.f);
          if (k.floats) sum(y, x, 1);  // touch the pages before timing
          ++ready;
          while (ready.load() < (pair ? 2 : 1)) {
          }
          const double c0 = seconds(CLOCK_THREAD_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC);
          if (k.floats) sum(y, x, k.reps);
          else fma_regs();
          cpu_ms[cpu] = 1e3 * (seconds(CLOCK_THREAD_CPUTIME_ID) - c0);
          wall_ms[cpu] = 1e3 * (seconds(CLOCK_MONOTONIC) - w0);
        };
        const int first = mode == "alone_cpu1" ? 1 : 0;
        std::thread a(body, first), b;
        if (pair) b = std::thread(body, 1);
        a.join();
        if (pair) b.join();
        fmt::print("bench=pipeline_vcpu round={} kernel={} mode={} cpu_ms={:.1f} wall_ms={:.1f}{}\n", r, k.name, mode,
                   cpu_ms[first], wall_ms[first], pair ? fmt::format(" other_cpu_ms={:.1f}", cpu_ms[1]) : std::string());
        std::fflush(stdout);
      }
  return 0;
}
