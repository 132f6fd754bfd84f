#include "trib/core/tensor.h"

#include <algorithm>
#include <cstring>

namespace trib {

Tensor Tensor::empty(DType dtype, Shape shape, Allocator* alloc) {
  std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  Allocator& a = alloc ? *alloc : default_allocator();
  return Tensor(a.allocate(bytes), 0, dtype, std::move(shape));
}

Tensor Tensor::zeros(DType dtype, Shape shape, Allocator* alloc) {
  Tensor t = empty(dtype, std::move(shape), alloc);
  std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::full(Shape shape, float value, Allocator* alloc) {
  Tensor t = empty(DType::f32, std::move(shape), alloc);
  t.fill(value);
  return t;
}

void Tensor::fill(float value) {
  switch (dtype_) {
    case DType::f32: std::fill_n(data<float>(), numel(), value); break;
    case DType::i32: std::fill_n(data<std::int32_t>(), numel(), static_cast<std::int32_t>(value)); break;
    case DType::i64: std::fill_n(data<std::int64_t>(), numel(), static_cast<std::int64_t>(value)); break;
  }
}

double Tensor::item() const {
  TRIB_CHECK(defined() && numel() == 1, InvalidArgument,
             "item() needs a one-element tensor, got {}", spec_string());
  switch (dtype_) {
    case DType::f32: return *data<float>();
    case DType::i32: return *data<std::int32_t>();
    case DType::i64: return static_cast<double>(*data<std::int64_t>());
  }
  return 0;
}

Tensor Tensor::reshape(Shape shape) const {
  TRIB_CHECK(shape.numel() == numel(), ShapeError, "cannot reshape {} to {}: element counts differ",
             spec_string(), shape.to_string());
  return Tensor(storage_, offset_, dtype_, std::move(shape));
}

Tensor Tensor::view(std::int64_t offset, Shape shape) const {
  TRIB_CHECK(offset >= 0 && offset + shape.numel() <= numel(), InvalidArgument,
             "view of {} elements at {} does not fit in {}", shape.numel(), offset, spec_string());
  return Tensor(storage_, offset_ + static_cast<std::size_t>(offset) * dtype_size(dtype_), dtype_, std::move(shape));
}

Tensor Tensor::clone(Allocator* alloc) const {
  Tensor t = empty(dtype_, shape_, alloc);
  if (nbytes() > 0) std::memcpy(t.raw_data(), raw_data(), nbytes());
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  TRIB_CHECK(src.dtype() == dtype_ && src.numel() == numel(), InvalidArgument,
             "copy_from: source {} does not match destination {}", src.spec_string(), spec_string());
  if (nbytes() > 0 && raw_data() != src.raw_data()) std::memmove(raw_data(), src.raw_data(), nbytes());
}

std::string Tensor::spec_string() const {
  if (!defined()) return "undefined";
  return fmt::format("{}{}", dtype_name(dtype_), shape_.to_string());
}

void Tensor::check_dtype(DType wanted) const {
  TRIB_CHECK(defined(), InvalidArgument, "access to an undefined tensor");
  TRIB_CHECK(wanted == dtype_, InvalidArgument, "tensor {} accessed as {}", spec_string(),
             dtype_name(wanted));
}

}  // namespace trib
