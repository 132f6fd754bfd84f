// The arithmetic of the collectives: element-wise sums for every dtype, averaging, and the
// 16-bit wire formats (bf16, fp16) with fp32 accumulation. Loops are vectorised
// (`#pragma omp simd`) and compiled for AVX-512, AVX2 and baseline x86-64, picked at load
// time, because reducing runs at memory speed only if it is vectorised.
#pragma once

#include <cstddef>
#include <cstdint>

#include "trib/core/dtype.h"

namespace trib::collectives::detail {

// dst[i] += src[i] for n elements of `dtype` (integers wrap, as two's complement).
void add_into(DType dtype, void* dst, const void* src, std::int64_t n);
// x[i] *= factor.
void scale(float* x, std::int64_t n, float factor);

enum class Wire16 : std::uint8_t { bf16, f16 };

// Rounds to the nearest 16-bit value (ties to even); NaN stays NaN, out-of-range fp16
// values become infinity.
void pack16(Wire16 format, const float* src, std::uint16_t* dst, std::int64_t n);
void unpack16(Wire16 format, const std::uint16_t* src, float* dst, std::int64_t n);
// dst[i] += widen(src[i]): the fp32 accumulation of a 16-bit partial sum.
void add16_into(Wire16 format, float* dst, const std::uint16_t* src, std::int64_t n);
// x[i] = widen(narrow(x[i])): what every rank will decode, so that the owner of a block
// keeps exactly the values the others receive.
void round_through16(Wire16 format, float* x, std::int64_t n);

}  // namespace trib::collectives::detail
