#include "pipeline/gradient_sum.h"

#include <cstring>

namespace trib::pipeline {

namespace {

update::GradTensor concat(const std::vector<update::GradTensor>& parts) {
  std::int64_t rows = 0;
  for (const auto& p : parts) rows += p.values.shape()[0];
  std::vector<std::int64_t> dims = parts[0].values.shape().dims();
  dims[0] = rows;
  update::GradTensor out{Tensor::empty(DType::f32, Shape(dims)), Tensor::empty(parts[0].indices.dtype(), Shape{rows})};
  std::size_t vo = 0, io = 0;
  for (const auto& p : parts) {
    std::memcpy(static_cast<char*>(out.values.raw_data()) + vo, p.values.raw_data(), p.values.nbytes());
    std::memcpy(static_cast<char*>(out.indices.raw_data()) + io, p.indices.raw_data(), p.indices.nbytes());
    vo += p.values.nbytes();
    io += p.indices.nbytes();
  }
  return out;
}

}  // namespace

void GradientSum::add(std::vector<update::GradTensor>& grads) {
  if (sum_.empty()) {
    sum_.resize(grads.size());
    sparse_parts_.resize(grads.size());
  }
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].sparse()) {
      sparse_parts_[i].push_back({grads[i].values.clone(), grads[i].indices.clone()});
      continue;
    }
    if (!sum_[i].values.defined()) {
      // The first micro-batch's gradient becomes the sum: a copy only when something else
      // still holds its memory (a 1024 x 1024 layer's is 4 MB, a memory-bound pass per step).
      const bool ours = grads[i].values.storage().use_count() == 1;
      sum_[i].values = ours ? std::move(grads[i].values) : grads[i].values.clone();
      continue;
    }
    float* acc = sum_[i].values.data<float>();
    const float* g = grads[i].values.data<float>();
    for (std::int64_t k = 0; k < sum_[i].values.numel(); ++k) acc[k] += g[k];
  }
}

std::vector<update::GradTensor> GradientSum::mean(int count) {
  const float f = 1.0f / static_cast<float>(count);
  for (std::size_t i = 0; i < sum_.size(); ++i) {
    if (!sparse_parts_[i].empty()) sum_[i] = concat(sparse_parts_[i]);
    float* v = sum_[i].values.data<float>();
    for (std::int64_t k = 0; k < sum_[i].values.numel(); ++k) v[k] *= f;
  }
  sparse_parts_.clear();
  return std::move(sum_);
}

}  // namespace trib::pipeline
