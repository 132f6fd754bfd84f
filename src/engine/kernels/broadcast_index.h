// NumPy broadcasting: the shape two shapes broadcast to, and how to walk an operand while
// walking the broadcast output. Axes align from the right; an axis of size 1 (or a missing
// one) repeats, which is a stride of 0, so one strided loop serves every pattern.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "trib/core/shape.h"

namespace trib::kernels {

// The broadcast shape of a and b; nullopt when some axis differs and neither side is 1.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// Whether `from` broadcasts to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to);

// Strides (in elements) of a row-major `in` read as `out`: out's rank, 0 on repeated axes.
std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out);

// An output walk with each operand's strides, simplified: size-1 axes dropped and adjacent
// axes merged where every operand steps through them contiguously. Same shapes and scalar
// operands become one axis; [N, C] + [C] stays two (the row pattern). The innermost stride
// of every operand is then 0 or 1, which is what lets the inner loops vectorise.
struct StridedLoop {
  std::vector<std::int64_t> dims;                  // at least one axis
  std::vector<std::vector<std::int64_t>> strides;  // per operand, one per axis
  std::int64_t inner() const { return dims.back(); }
  std::int64_t rows() const;                       // product of all axes but the last
};
StridedLoop plan_loop(const Shape& out, std::vector<std::vector<std::int64_t>> strides);

// Naive indexing for reference kernels: the offset, in an operand with `strides` (out's
// rank), of the output element at flat position `flat`.
std::int64_t offset_of(std::int64_t flat, const Shape& out, std::span<const std::int64_t> strides);

}  // namespace trib::kernels
