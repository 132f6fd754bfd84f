#include "trib/data/transforms.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "trib/core/error.h"

namespace trib::data {
namespace {

// Rows read at a time by compute_feature_stats: large enough to amortise gather, small enough
// to stay in cache-friendly sizes.
constexpr std::int64_t kStatsChunkRows = 4096;

const Tensor& f32_field(const Batch& batch, std::string_view field, std::string_view transform) {
  const Tensor& t = batch.get(field);
  TRIB_CHECK(t.dtype() == DType::f32, InvalidArgument, "{} needs f32 field '{}', got {}", transform,
             field, t.spec_string());
  return t;
}

template <typename From, typename To>
void convert(const Tensor& from, const Tensor& to) {
  const From* in = from.data<From>();
  To* out = to.data<To>();
  for (std::int64_t i = 0; i < from.numel(); ++i) out[i] = static_cast<To>(in[i]);
}

template <typename From>
void convert_from(const Tensor& from, const Tensor& to) {
  switch (to.dtype()) {
    case DType::f32: convert<From, float>(from, to); break;
    case DType::i32: convert<From, std::int32_t>(from, to); break;
    case DType::i64: convert<From, std::int64_t>(from, to); break;
  }
}

}  // namespace

BatchTransform normalize(std::vector<float> mean, std::vector<float> stddev, std::string_view field) {
  TRIB_CHECK(!mean.empty() && !stddev.empty(), InvalidArgument, "normalize: mean and stddev must not be empty");
  for (std::size_t i = 0; i < stddev.size(); ++i)
    TRIB_CHECK(stddev[i] > 0, InvalidArgument, "normalize: stddev[{}] is {}, must be > 0", i, stddev[i]);
  // Multiplying by a precomputed reciprocal keeps the loop free of divisions.
  std::vector<float> inverse(stddev.size());
  std::transform(stddev.begin(), stddev.end(), inverse.begin(), [](float s) { return 1.0f / s; });
  return [mean = std::move(mean), inverse = std::move(inverse), field = std::string(field)](Batch batch) {
    const Tensor& t = f32_field(batch, field, "normalize");
    const std::int64_t rows = t.shape()[0];
    const auto per_row = static_cast<std::size_t>(rows == 0 ? 0 : t.numel() / rows);
    TRIB_CHECK((mean.size() == 1 || mean.size() == per_row) &&
                   (inverse.size() == 1 || inverse.size() == per_row),
               InvalidArgument,
               "normalize: field '{}' has {} values per example but mean has {} and stddev {}",
               field, per_row, mean.size(), inverse.size());
    float* x = t.data<float>();
    const std::size_t mean_step = mean.size() == 1 ? 0 : 1, inverse_step = inverse.size() == 1 ? 0 : 1;
    for (std::int64_t r = 0; r < rows; ++r, x += per_row)
      for (std::size_t j = 0; j < per_row; ++j)
        x[j] = (x[j] - mean[j * mean_step]) * inverse[j * inverse_step];
    return batch;
  };
}

BatchTransform scale(float factor, std::string_view field) {
  return [factor, field = std::string(field)](Batch batch) {
    const Tensor& t = f32_field(batch, field, "scale");
    float* x = t.data<float>();
    for (std::int64_t i = 0; i < t.numel(); ++i) x[i] *= factor;
    return batch;
  };
}

BatchTransform cast(std::string_view field, DType to) {
  return [field = std::string(field), to](Batch batch) {
    batch.set(field, cast_tensor(batch.get(field), to));
    return batch;
  };
}

Tensor cast_tensor(const Tensor& value, DType to) {
  if (value.dtype() == to) return value;
  Tensor out = Tensor::empty(to, value.shape());
  switch (value.dtype()) {
    case DType::f32: convert_from<float>(value, out); break;
    case DType::i32: convert_from<std::int32_t>(value, out); break;
    case DType::i64: convert_from<std::int64_t>(value, out); break;
  }
  return out;
}

FeatureStats compute_feature_stats(const Dataset& dataset) {
  std::vector<double> sum, sum_squares;
  for (std::int64_t begin = 0; begin < dataset.size(); begin += kStatsChunkRows) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(std::min(kStatsChunkRows, dataset.size() - begin)));
    std::iota(indices.begin(), indices.end(), begin);
    const Tensor features = dataset.gather(indices).features();
    const auto per_row = static_cast<std::size_t>(features.numel() / features.shape()[0]);
    sum.resize(per_row, 0.0);
    sum_squares.resize(per_row, 0.0);
    const float* x = features.data<float>();
    for (std::size_t r = 0; r < indices.size(); ++r, x += per_row) {
      for (std::size_t j = 0; j < per_row; ++j) {
        sum[j] += x[j];
        sum_squares[j] += static_cast<double>(x[j]) * x[j];
      }
    }
  }
  FeatureStats stats;
  const auto n = static_cast<double>(dataset.size());
  for (std::size_t j = 0; j < sum.size(); ++j) {
    const double mean = sum[j] / n;
    const double variance = std::max(0.0, sum_squares[j] / n - mean * mean);
    stats.mean.push_back(static_cast<float>(mean));
    // A constant feature (a border pixel that is always 0) has no spread to divide by: leave
    // its scale alone and only centre it.
    stats.stddev.push_back(variance > 0 ? static_cast<float>(std::sqrt(variance)) : 1.0f);
  }
  return stats;
}

}  // namespace trib::data
