// A batch: named tensors that share their first dimension (the rows). The trainer reads
// "features" (f32 [N, ...]) and "labels" (i32 [N]); a source may add more fields (weights,
// ids, a text mask) without any interface changing. An example is a batch of one row.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trib/core/tensor.h"

namespace trib::data {

class Batch {
 public:
  static constexpr std::string_view kFeatures = "features";
  static constexpr std::string_view kLabels = "labels";

  Batch() = default;
  Batch(Tensor features, Tensor labels);

  // Adds or replaces a field. Throws ShapeError if its rows differ from the other fields'.
  void set(std::string_view name, Tensor value);
  bool has(std::string_view name) const { return find(name) != nullptr; }
  // Throws NotFound naming the field and the fields present.
  const Tensor& get(std::string_view name) const;

  const Tensor& features() const { return get(kFeatures); }
  const Tensor& labels() const { return get(kLabels); }

  // Rows shared by every field; 0 for a batch without fields.
  std::int64_t rows() const;
  // In insertion order, so that iteration (and serialisation) is deterministic.
  const std::vector<std::pair<std::string, Tensor>>& fields() const { return fields_; }

 private:
  const Tensor* find(std::string_view name) const;
  std::vector<std::pair<std::string, Tensor>> fields_;
};

// Rows [begin, end) of every field, copied into new tensors.
Batch slice_rows(const Batch& batch, std::int64_t begin, std::int64_t end);

// The rows at `rows`, in that order, copied into new tensors.
Batch gather_rows(const Batch& batch, std::span<const std::int64_t> rows);

// The rows of all `parts`, in order, as one batch. The parts must have the same fields with
// the same dtypes and row shapes; a mismatch is a ShapeError naming the field.
Batch concat_rows(std::span<const Batch> parts);

}  // namespace trib::data
