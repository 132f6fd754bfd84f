#include "update/all_finite.h"

#include <bit>
#include <cstdint>
#include <cstring>

namespace trib::update {

namespace {

// Whether any of v[0, n) is NaN or Inf: exactly the floats whose exponent bits are all ones.
// Integer tests OR-ed together need no float reassociation, and the vector type makes the
// compiler use SIMD registers whatever its cost model at -O2. (One float accumulator had
// made this a chain of dependent adds, a quarter of an MLP step.) Ints is as wide as the
// registers: 4 ints for the baseline's 128 bits, 16 for AVX-512; the compiler lowers vectors
// wider than the target's registers poorly, so each width gets its own build.
typedef std::int32_t Int32x4 __attribute__((vector_size(16)));
typedef std::int32_t Int32x16 __attribute__((vector_size(64)));

template <typename Ints>
[[gnu::always_inline]] inline bool scan_non_finite(const float* v, std::int64_t n) {
  constexpr int Lanes = sizeof(Ints) / sizeof(std::int32_t);
  constexpr std::int32_t kExponent = 0x7f800000;
  Ints bad0{}, bad1{};  // lanes all ones where a non-finite value was seen
  std::int64_t i = 0;
  for (; i + 2 * Lanes <= n; i += 2 * Lanes) {
    Ints a, b;
    std::memcpy(&a, v + i, sizeof a);
    std::memcpy(&b, v + i + Lanes, sizeof b);
    bad0 |= (a & kExponent) == kExponent;
    bad1 |= (b & kExponent) == kExponent;
  }
  bad0 |= bad1;
  std::int32_t any = 0;
  for (int j = 0; j < Lanes; ++j) any |= bad0[j];
  for (; i < n; ++i) any |= (std::bit_cast<std::int32_t>(v[i]) & kExponent) == kExponent;
  return any != 0;
}

[[gnu::target("avx512f")]] bool any_non_finite_avx512(const float* v, std::int64_t n) {
  return scan_non_finite<Int32x16>(v, n);
}

bool any_non_finite(const float* v, std::int64_t n) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512 ? any_non_finite_avx512(v, n) : scan_non_finite<Int32x4>(v, n);
}

}  // namespace

bool all_finite(const std::vector<GradTensor>& grads) {
  for (const GradTensor& g : grads)
    if (any_non_finite(g.values.data<float>(), g.values.numel())) return false;
  return true;
}

}  // namespace trib::update
