// Tensor shapes: a list of non-negative dimensions whose product is checked for overflow.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace trib {

class Shape {
 public:
  // More dimensions than any model needs; bounds what a file or frame may claim.
  static constexpr int kMaxRank = 8;
  // Largest element count a tensor may have (2^48): far beyond memory, far below overflow.
  static constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;

  Shape() = default;  // a scalar
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::vector<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t numel() const { return numel_; }
  // Negative indices count from the end, as in Python.
  std::int64_t operator[](int axis) const;
  std::int64_t dim(int axis) const { return (*this)[axis]; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  // Resolves a possibly negative axis; throws InvalidArgument if it is out of range.
  int normalize_axis(int axis) const;

  // Row-major strides, in elements.
  std::vector<std::int64_t> strides() const;

  bool operator==(const Shape& other) const { return dims_ == other.dims_; }
  bool operator!=(const Shape& other) const { return !(*this == other); }

  // "[64, 784]"
  std::string to_string() const;

 private:
  void validate();
  std::vector<std::int64_t> dims_;
  std::int64_t numel_ = 1;
};

}  // namespace trib
