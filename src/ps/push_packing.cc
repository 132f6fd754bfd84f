#include "ps/push_packing.h"

#include <algorithm>
#include <cstring>

#include "ps/slice_io.h"

namespace trib::ps {
namespace {

std::int64_t as_index(const Tensor& ids, std::int64_t k) {
  return ids.dtype() == DType::i64 ? ids.data<std::int64_t>()[k] : ids.data<std::int32_t>()[k];
}

// The rows of an embedding gradient that fall in one slice: (row within the slice, position
// in the gradient), sorted by row, then by position.
struct SliceRows {
  std::vector<std::pair<std::int64_t, std::int64_t>> hits;
  std::int64_t unique = 0;
};

SliceRows rows_in(const Slice& s, const Tensor& indices) {
  SliceRows r;
  for (std::int64_t k = 0; k < indices.numel(); ++k) {
    const std::int64_t id = as_index(indices, k);
    if (id >= s.row_begin && id < s.row_end) r.hits.emplace_back(id - s.row_begin, k);
  }
  std::sort(r.hits.begin(), r.hits.end());
  for (std::size_t i = 0; i < r.hits.size(); ++i)
    if (i == 0 || r.hits[i].first != r.hits[i - 1].first) ++r.unique;
  return r;
}

}  // namespace

Tensor pack_gradients(const PushPacking& p, const std::vector<update::GradTensor>& grads, proto::Body& body) {
  const std::vector<Slice>& slices = *p.slices;
  // Sizes first, so that the values are written once, straight into the message.
  std::vector<SliceRows> sparse(slices.size());
  std::vector<bool> is_sparse(slices.size(), false);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const update::GradTensor& g = grads[(*p.gradient)[i]];
    if (g.sparse() && !p.densify) {
      is_sparse[i] = true;
      sparse[i] = rows_in(slices[i], g.indices);
      total += sparse[i].unique * variable_info(*p.variables, slices[i].variable).row_elements();
    } else {
      total += slices[i].elements;
    }
  }
  Tensor values = Tensor::empty(DType::f32, Shape{total}, p.allocator);
  float* out = values.data<float>();
  // Dense slices in slice order.
  for (std::size_t i = 0; i < slices.size(); ++i) {
    if (is_sparse[i]) continue;
    const Slice& s = slices[i];
    const std::int64_t re = variable_info(*p.variables, s.variable).row_elements();
    const update::GradTensor& g = grads[(*p.gradient)[i]];
    if (!g.sparse()) {
      std::memcpy(out, g.values.data<float>() + s.row_begin * re, static_cast<std::size_t>(s.elements) * 4);
    } else {  // densified embedding rows
      std::memset(out, 0, static_cast<std::size_t>(s.elements) * 4);
      for (const auto& [row, k] : rows_in(s, g.indices).hits)
        for (std::int64_t e = 0; e < re; ++e) out[row * re + e] += g.values.data<float>()[k * re + e];
    }
    out += s.elements;
  }
  // Then each sparse slice's distinct rows, with their ids.
  std::int64_t id_total = 0;
  for (std::size_t i = 0; i < slices.size(); ++i)
    if (is_sparse[i]) id_total += sparse[i].unique;
  body.sparse.clear();
  body.ids = id_total > 0 ? Tensor::empty(DType::i64, Shape{id_total}) : Tensor();
  std::int64_t* ids = id_total > 0 ? body.ids.data<std::int64_t>() : nullptr;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    if (!is_sparse[i]) continue;
    const std::int64_t re = variable_info(*p.variables, slices[i].variable).row_elements();
    const float* src = grads[(*p.gradient)[i]].values.data<float>();
    const auto& hits = sparse[i].hits;
    for (std::size_t h = 0; h < hits.size(); ++h) {
      const float* row = src + hits[h].second * re;
      if (h == 0 || hits[h].first != hits[h - 1].first) {
        if (h > 0) out += re;
        *ids++ = hits[h].first;
        std::memcpy(out, row, static_cast<std::size_t>(re) * 4);
      } else {
        for (std::int64_t e = 0; e < re; ++e) out[e] += row[e];
      }
    }
    if (!hits.empty()) out += re;
    body.sparse.push_back({static_cast<std::uint32_t>(i), 0, sparse[i].unique});
  }
  return values;
}

}  // namespace trib::ps
