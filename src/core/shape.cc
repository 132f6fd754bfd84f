#include "trib/core/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib {

Shape::Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) { validate(); }
Shape::Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) { validate(); }
Shape::Shape(std::span<const std::int64_t> dims) : dims_(dims.begin(), dims.end()) { validate(); }

void Shape::validate() {
  TRIB_CHECK(rank() <= kMaxRank, InvalidArgument, "shape {} has {} dimensions: at most {} allowed",
             to_string(), rank(), kMaxRank);
  numel_ = 1;
  for (std::int64_t d : dims_) {
    TRIB_CHECK(d >= 0, InvalidArgument, "shape {} has a negative dimension", to_string());
    // Division instead of multiplication, so the check itself cannot overflow.
    TRIB_CHECK(d == 0 || numel_ <= kMaxElements / d, InvalidArgument,
               "shape {} has more than 2^48 elements", to_string());
    numel_ *= d;
  }
}

int Shape::normalize_axis(int axis) const {
  int a = axis < 0 ? axis + rank() : axis;
  TRIB_CHECK(a >= 0 && a < rank(), InvalidArgument, "axis {} is out of range for shape {} (rank {})",
             axis, to_string(), rank());
  return a;
}

std::int64_t Shape::operator[](int axis) const { return dims_[normalize_axis(axis)]; }

std::vector<std::int64_t> Shape::strides() const {
  std::vector<std::int64_t> s(dims_.size(), 1);
  for (int i = rank() - 2; i >= 0; --i) s[i] = s[i + 1] * dims_[i + 1];
  return s;
}

std::string Shape::to_string() const { return fmt::format("[{}]", fmt::join(dims_, ", ")); }

}  // namespace trib
