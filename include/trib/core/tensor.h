// A dense, row-major, n-dimensional array of one dtype. Copies share storage (a Tensor is a
// handle); clone() makes a deep copy. reshape() returns a view over the same storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trib/core/allocator.h"
#include "trib/core/dtype.h"
#include "trib/core/error.h"
#include "trib/core/shape.h"

namespace trib {

class Tensor {
 public:
  Tensor() = default;  // undefined: holds nothing

  // Uninitialised contents; from `alloc` when given, else the default allocator.
  static Tensor empty(DType dtype, Shape shape, Allocator* alloc = nullptr);
  static Tensor zeros(DType dtype, Shape shape, Allocator* alloc = nullptr);
  static Tensor full(Shape shape, float value, Allocator* alloc = nullptr);
  static Tensor scalar(float value) { return full(Shape{}, value); }
  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

  void* raw_data() const { return storage_ ? storage_->data() + offset_ : nullptr; }
  // Typed access; throws InvalidArgument if T does not match the dtype.
  template <typename T> T* data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }
  template <typename T> std::span<T> span() const { return {data<T>(), static_cast<std::size_t>(numel())}; }
  template <typename T> std::vector<T> to_vector() const {
    auto s = span<T>();
    return {s.begin(), s.end()};
  }
  // The single element of a one-element tensor, as double.
  double item() const;

  // A view with another shape over the same elements; the element count must match.
  Tensor reshape(Shape shape) const;
  // A view of `shape` over the contiguous elements starting at element `offset` (a row
  // range of a matrix, a slice of a flat buffer). Throws InvalidArgument if out of range.
  Tensor view(std::int64_t offset, Shape shape) const;
  Tensor clone(Allocator* alloc = nullptr) const;
  // Copies the elements of `src` (same dtype and element count) into this tensor.
  void copy_from(const Tensor& src);
  void fill(float value);

  // Whether two tensors share the same storage (so writing one changes the other).
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // "f32[64, 784]"
  std::string spec_string() const;

 private:
  Tensor(std::shared_ptr<Storage> storage, std::size_t offset, DType dtype, Shape shape)
      : storage_(std::move(storage)), offset_(offset), dtype_(dtype), shape_(std::move(shape)) {}
  void check_dtype(DType wanted) const;

  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;
  DType dtype_ = DType::f32;
  Shape shape_;
};

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  TRIB_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(), InvalidArgument,
             "Tensor::from_vector: {} values do not fill shape {} ({} elements)", values.size(),
             shape.to_string(), shape.numel());
  Tensor t = empty(dtype_of<T>(), std::move(shape));
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

}  // namespace trib
