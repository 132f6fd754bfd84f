#include "trib/data/batch.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::data {
namespace {

// Batch::set admits only tensors of rank >= 1, so every field has a first dimension.
std::int64_t rows_of(const Tensor& t) { return t.shape()[0]; }

// The shape of one row: the tensor's shape without its first dimension.
std::vector<std::int64_t> row_dims(const Tensor& t) {
  const auto& dims = t.shape().dims();
  return {dims.begin() + 1, dims.end()};
}

std::size_t row_bytes(const Tensor& t) {
  std::int64_t rows = rows_of(t);
  return rows == 0 ? 0 : t.nbytes() / static_cast<std::size_t>(rows);
}

// A tensor of `rows` rows shaped like `like`'s rows.
Tensor with_rows(const Tensor& like, std::int64_t rows) {
  std::vector<std::int64_t> dims = row_dims(like);
  dims.insert(dims.begin(), rows);
  return Tensor::empty(like.dtype(), Shape(std::move(dims)));
}

}  // namespace

Batch::Batch(Tensor features, Tensor labels) {
  set(kFeatures, std::move(features));
  set(kLabels, std::move(labels));
}

void Batch::set(std::string_view name, Tensor value) {
  TRIB_CHECK(value.defined() && value.shape().rank() >= 1, ShapeError,
             "batch field '{}' must have a row dimension, got {}", name, value.spec_string());
  auto same_name = [&](const auto& field) { return field.first == name; };
  auto existing = std::find_if(fields_.begin(), fields_.end(), same_name);
  const bool has_others = fields_.size() > (existing == fields_.end() ? 0u : 1u);
  TRIB_CHECK(!has_others || rows_of(value) == rows(), ShapeError,
             "batch field '{}' has {} rows but the batch has {}", name, rows_of(value), rows());
  if (existing != fields_.end()) existing->second = std::move(value);
  else fields_.emplace_back(std::string(name), std::move(value));
}

const Tensor* Batch::find(std::string_view name) const {
  for (const auto& [field, tensor] : fields_)
    if (field == name) return &tensor;
  return nullptr;
}

const Tensor& Batch::get(std::string_view name) const {
  const Tensor* t = find(name);
  if (t == nullptr) {
    std::vector<std::string_view> names;
    for (const auto& field : fields_) names.push_back(field.first);
    throw NotFound(fmt::format("batch has no field '{}' (fields: {})", name, fmt::join(names, ", ")));
  }
  return *t;
}

std::int64_t Batch::rows() const { return fields_.empty() ? 0 : rows_of(fields_.front().second); }

Batch slice_rows(const Batch& batch, std::int64_t begin, std::int64_t end) {
  TRIB_CHECK(0 <= begin && begin <= end && end <= batch.rows(), InvalidArgument,
             "slice_rows: rows [{}, {}) are outside a batch of {} rows", begin, end, batch.rows());
  Batch out;
  for (const auto& [name, tensor] : batch.fields()) {
    Tensor part = with_rows(tensor, end - begin);
    std::size_t stride = row_bytes(tensor);
    if (part.nbytes() > 0)
      std::memcpy(part.raw_data(), static_cast<const std::byte*>(tensor.raw_data()) + begin * stride,
                  part.nbytes());
    out.set(name, std::move(part));
  }
  return out;
}

Batch gather_rows(const Batch& batch, std::span<const std::int64_t> rows) {
  const auto count = static_cast<std::int64_t>(rows.size());
  for (std::int64_t r : rows)
    TRIB_CHECK(r >= 0 && r < batch.rows(), InvalidArgument,
               "gather_rows: row {} is outside a batch of {} rows", r, batch.rows());
  Batch out;
  for (const auto& [name, tensor] : batch.fields()) {
    Tensor picked = with_rows(tensor, count);
    const std::size_t stride = row_bytes(tensor);
    const auto* src = static_cast<const std::byte*>(tensor.raw_data());
    auto* dst = static_cast<std::byte*>(picked.raw_data());
    for (std::int64_t i = 0; i < count; ++i) std::memcpy(dst + i * stride, src + rows[i] * stride, stride);
    out.set(name, std::move(picked));
  }
  return out;
}

Batch concat_rows(std::span<const Batch> parts) {
  if (parts.empty()) return {};
  if (parts.size() == 1) return parts.front();
  const Batch& first = parts.front();
  std::int64_t total = 0;
  for (const Batch& part : parts) {
    TRIB_CHECK(part.fields().size() == first.fields().size(), ShapeError,
               "concat_rows: parts have {} and {} fields", first.fields().size(), part.fields().size());
    total += part.rows();
  }
  Batch out;
  for (std::size_t f = 0; f < first.fields().size(); ++f) {
    const auto& [name, like] = first.fields()[f];
    Tensor joined = with_rows(like, total);
    auto* dst = static_cast<std::byte*>(joined.raw_data());
    for (const Batch& part : parts) {
      const Tensor& piece = part.get(name);
      TRIB_CHECK(piece.dtype() == like.dtype() && row_dims(piece) == row_dims(like), ShapeError,
                 "concat_rows: field '{}' is {} in one part and {} in another", name,
                 like.spec_string(), piece.spec_string());
      if (piece.nbytes() > 0) std::memcpy(dst, piece.raw_data(), piece.nbytes());
      dst += piece.nbytes();
    }
    out.set(name, std::move(joined));
  }
  return out;
}

}  // namespace trib::data
