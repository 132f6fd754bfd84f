// Argument checks shared by every optimizer, and the sparse path's merging of duplicate rows.
#include "trib/optim/optimizer.h"

#include <algorithm>
#include <numeric>

namespace trib {
namespace {

// Sorts the positions of `indices` by row (ties by position, so the float sums below have a
// fixed order), checks every row is in [0, num_rows), and sums the gradient rows of equal
// indices into scratch.summed, one row per distinct index.
template <typename Index>
void merge_duplicate_rows(const std::string& var, const Index* indices, std::int64_t n,
                          const float* rows, std::int64_t width, std::int64_t num_rows,
                          SlotStore::SparseScratch& scratch) {
  for (std::int64_t i = 0; i < n; ++i) {
    TRIB_CHECK(indices[i] >= 0 && indices[i] < num_rows, InvalidArgument,
               "sparse update of '{}': index {} at position {} is outside [0, {})", var,
               static_cast<std::int64_t>(indices[i]), i, num_rows);
  }
  // resize() keeps the capacity, so after the largest batch no step allocates.
  scratch.order.resize(static_cast<std::size_t>(n));
  std::iota(scratch.order.begin(), scratch.order.end(), std::int64_t{0});
  std::sort(scratch.order.begin(), scratch.order.end(), [indices](std::int64_t a, std::int64_t b) {
    return indices[a] < indices[b] || (indices[a] == indices[b] && a < b);
  });
  std::size_t distinct = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i == 0 || indices[scratch.order[i]] != indices[scratch.order[i - 1]]) ++distinct;
  }
  scratch.offsets.resize(distinct);
  scratch.summed.resize(distinct * static_cast<std::size_t>(width));
  std::int64_t u = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t pos = scratch.order[i];
    const float* src = rows + pos * width;
    if (i == 0 || indices[pos] != indices[scratch.order[i - 1]]) {
      ++u;
      scratch.offsets[u] = static_cast<std::int64_t>(indices[pos]) * width;
      std::copy_n(src, width, scratch.summed.data() + u * width);
    } else {
      float* dst = scratch.summed.data() + u * width;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dst[j] += src[j];
    }
  }
}

}  // namespace

void Optimizer::apply(const std::string& var, Tensor& param, const Tensor& grad, SlotStore& slots,
                      float lr) const {
  TRIB_CHECK(param.defined() && param.dtype() == DType::f32, InvalidArgument,
             "{} update of '{}': the variable must be f32, got {}", name(), var, param.spec_string());
  TRIB_CHECK(grad.defined() && grad.dtype() == DType::f32 && grad.shape() == param.shape(),
             InvalidArgument, "{} update of '{}': gradient {} does not match variable {}", name(), var,
             grad.spec_string(), param.spec_string());
  const std::int64_t whole[1] = {0};
  update(var, param, whole, grad.data<float>(), param.numel(), slots, lr);
}

void Optimizer::apply_sparse(const std::string& var, Tensor& param, const Tensor& rows,
                             const Tensor& indices, SlotStore& slots, float lr) const {
  TRIB_CHECK(param.defined() && param.dtype() == DType::f32 && param.shape().rank() >= 1,
             InvalidArgument, "sparse {} update of '{}': the variable must be f32 of rank >= 1, got {}",
             name(), var, param.spec_string());
  TRIB_CHECK(indices.defined() && (indices.dtype() == DType::i32 || indices.dtype() == DType::i64) &&
                 indices.shape().rank() == 1,
             InvalidArgument, "sparse {} update of '{}': indices must be i32 or i64 of rank 1, got {}",
             name(), var, indices.spec_string());
  const std::int64_t n = indices.numel();
  const auto& pdims = param.shape().dims();
  bool rows_match = rows.defined() && rows.dtype() == DType::f32 && rows.shape().rank() == param.shape().rank() &&
                    rows.shape().dim(0) == n;
  std::int64_t width = 1;
  for (std::size_t d = 1; d < pdims.size(); ++d) {
    width *= pdims[d];
    rows_match = rows_match && rows.shape().dims()[d] == pdims[d];
  }
  TRIB_CHECK(rows_match, InvalidArgument,
             "sparse {} update of '{}': gradient rows {} do not match {} indices into variable {}", name(),
             var, rows.spec_string(), n, param.spec_string());
  if (n == 0) return;  // nothing touched: no slot changes, no step counted

  SlotStore::SparseScratch& scratch = slots.scratch(var);
  if (indices.dtype() == DType::i32) {
    merge_duplicate_rows(var, indices.data<std::int32_t>(), n, rows.data<float>(), width, pdims[0], scratch);
  } else {
    merge_duplicate_rows(var, indices.data<std::int64_t>(), n, rows.data<float>(), width, pdims[0], scratch);
  }
  update(var, param, scratch.offsets, scratch.summed.data(), width, slots, lr);
}

}  // namespace trib
