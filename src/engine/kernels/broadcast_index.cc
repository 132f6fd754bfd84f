#include "engine/kernels/broadcast_index.h"

#include <algorithm>

namespace trib::kernels {

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    // Axis i of the result, counted from the right in each operand.
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a.dims()[ia] : 1, db = ib >= 0 ? b.dims()[ib] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    dims[i] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  auto s = broadcast_shapes(from, to);
  return s && *s == to;
}

std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<std::int64_t> strides(out.rank(), 0);
  const std::vector<std::int64_t> own = in.strides();
  const int shift = out.rank() - in.rank();
  for (int i = 0; i < in.rank(); ++i)
    strides[shift + i] = in.dims()[i] == 1 ? 0 : own[i];
  return strides;
}

std::int64_t StridedLoop::rows() const {
  std::int64_t r = 1;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) r *= dims[i];
  return r;
}

StridedLoop plan_loop(const Shape& out, std::vector<std::vector<std::int64_t>> strides) {
  StridedLoop loop;
  loop.strides.resize(strides.size());
  for (int axis = 0; axis < out.rank(); ++axis) {
    const std::int64_t d = out.dims()[axis];
    if (d == 1) continue;  // a size-1 axis never moves any operand
    // Axis `axis` merges into the previous kept one when, for every operand, one step of the
    // previous axis equals d steps of this one (output strides always satisfy this).
    bool merge = !loop.dims.empty();
    for (std::size_t k = 0; merge && k < strides.size(); ++k)
      merge = loop.strides[k].back() == strides[k][axis] * d;
    if (merge) {
      loop.dims.back() *= d;
      for (std::size_t k = 0; k < strides.size(); ++k) loop.strides[k].back() = strides[k][axis];
    } else {
      loop.dims.push_back(d);
      for (std::size_t k = 0; k < strides.size(); ++k) loop.strides[k].push_back(strides[k][axis]);
    }
  }
  if (loop.dims.empty()) {  // a scalar, or all axes of size 1
    loop.dims.push_back(1);
    for (auto& s : loop.strides) s.push_back(0);
  }
  return loop;
}

std::int64_t offset_of(std::int64_t flat, const Shape& out, std::span<const std::int64_t> strides) {
  std::int64_t offset = 0;
  for (int axis = out.rank() - 1; axis >= 0; --axis) {
    const std::int64_t d = out.dims()[axis];
    offset += (flat % d) * strides[axis];
    flat /= d;
  }
  return offset;
}

}  // namespace trib::kernels
