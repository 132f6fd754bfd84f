#include "collectives/reduce_kernels.h"

#include <bit>

#include "trib/core/error.h"

// One copy per instruction set, chosen by the loader (GCC function multiversioning).
#define TRIB_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace trib::collectives::detail {
namespace {

template <typename T>
TRIB_VECTOR_CLONES void add_typed(T* __restrict dst, const T* __restrict src, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Integers add as unsigned so that overflow wraps instead of being undefined.
TRIB_VECTOR_CLONES void add_u32(std::uint32_t* __restrict dst, const std::uint32_t* __restrict src, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

TRIB_VECTOR_CLONES void add_u64(std::uint64_t* __restrict dst, const std::uint64_t* __restrict src, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

inline std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
inline float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

inline std::uint16_t to_bf16(float f) {
  std::uint32_t u = bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(u >> 16);
}

inline float from_bf16(std::uint16_t h) { return from_bits(static_cast<std::uint32_t>(h) << 16); }

// Round-to-nearest-even fp32 -> fp16 without F16C (F. Giesen's float_to_half_fast3_rtne).
inline std::uint16_t to_f16(float f) {
  std::uint32_t x = bits(f);
  const std::uint32_t sign = x & 0x80000000u;
  x ^= sign;
  std::uint32_t o;
  if (x >= 0x47800000u) {  // too large for fp16 (>= 65536 after rounding), Inf or NaN
    o = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {  // below fp16's normal range: the FPU's rounding does it
    const float denorm_magic = from_bits(((127 - 15) + (23 - 10) + 1) << 23);
    o = bits(from_bits(x) + denorm_magic) - bits(denorm_magic);
  } else {
    const std::uint32_t mant_odd = (x >> 13) & 1u;
    x += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu;
    x += mant_odd;
    o = x >> 13;
  }
  return static_cast<std::uint16_t>(o | (sign >> 16));
}

inline float from_f16(std::uint16_t h) {
  const float magic = from_bits(113u << 23);
  const std::uint32_t shifted_exp = 0x7c00u << 13;
  std::uint32_t o = (static_cast<std::uint32_t>(h) & 0x7fffu) << 13;
  const std::uint32_t exp = shifted_exp & o;
  o += static_cast<std::uint32_t>(127 - 15) << 23;
  if (exp == shifted_exp) {
    o += static_cast<std::uint32_t>(128 - 16) << 23;  // Inf or NaN
  } else if (exp == 0) {
    o += 1u << 23;  // zero or subnormal: renormalise through the FPU
    o = bits(from_bits(o) - magic);
  }
  return from_bits(o | ((static_cast<std::uint32_t>(h) & 0x8000u) << 16));
}

TRIB_VECTOR_CLONES void scale_impl(float* __restrict x, std::int64_t n, float factor) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) x[i] *= factor;
}

template <bool kBf16>
TRIB_VECTOR_CLONES void pack_typed(const float* __restrict src, std::uint16_t* __restrict dst, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = kBf16 ? to_bf16(src[i]) : to_f16(src[i]);
}

template <bool kBf16>
TRIB_VECTOR_CLONES void unpack_typed(const std::uint16_t* __restrict src, float* __restrict dst, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = kBf16 ? from_bf16(src[i]) : from_f16(src[i]);
}

template <bool kBf16>
TRIB_VECTOR_CLONES void add16_typed(float* __restrict dst, const std::uint16_t* __restrict src, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] += kBf16 ? from_bf16(src[i]) : from_f16(src[i]);
}

template <bool kBf16>
TRIB_VECTOR_CLONES void round_typed(float* __restrict x, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) x[i] = kBf16 ? from_bf16(to_bf16(x[i])) : from_f16(to_f16(x[i]));
}

}  // namespace

void add_into(DType dtype, void* dst, const void* src, std::int64_t n) {
  switch (dtype) {
    case DType::f32:
      add_typed(static_cast<float*>(dst), static_cast<const float*>(src), n);
      return;
    case DType::i32:
      add_u32(static_cast<std::uint32_t*>(dst), static_cast<const std::uint32_t*>(src), n);
      return;
    case DType::i64:
      add_u64(static_cast<std::uint64_t*>(dst), static_cast<const std::uint64_t*>(src), n);
      return;
  }
  throw InvalidArgument("add_into: unknown dtype");
}

void scale(float* x, std::int64_t n, float factor) { scale_impl(x, n, factor); }

void pack16(Wire16 format, const float* src, std::uint16_t* dst, std::int64_t n) {
  format == Wire16::bf16 ? pack_typed<true>(src, dst, n) : pack_typed<false>(src, dst, n);
}

void unpack16(Wire16 format, const std::uint16_t* src, float* dst, std::int64_t n) {
  format == Wire16::bf16 ? unpack_typed<true>(src, dst, n) : unpack_typed<false>(src, dst, n);
}

void add16_into(Wire16 format, float* dst, const std::uint16_t* src, std::int64_t n) {
  format == Wire16::bf16 ? add16_typed<true>(dst, src, n) : add16_typed<false>(dst, src, n);
}

void round_through16(Wire16 format, float* x, std::int64_t n) {
  format == Wire16::bf16 ? round_typed<true>(x, n) : round_typed<false>(x, n);
}

}  // namespace trib::collectives::detail
