#include "trib/data/transforms.h"

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/core/error.h"

namespace trib::data {
namespace {

Batch two_by_two() {
  return Batch(Tensor::from_vector<float>(Shape{2, 2}, {1, 10, 3, 30}),
               Tensor::from_vector<std::int32_t>(Shape{2}, {0, 1}));
}

TEST(TransformsTest, NormalizeScalarAndPerElement) {
  EXPECT_EQ(normalize({1}, {2})(two_by_two()).features().to_vector<float>(),
            (std::vector<float>{0, 4.5f, 1, 14.5f}));
  EXPECT_EQ(normalize({2, 20}, {1, 10})(two_by_two()).features().to_vector<float>(),
            (std::vector<float>{-1, -1, 1, 1}));
  EXPECT_THROW(normalize({1, 2, 3}, {1})(two_by_two()), InvalidArgument);
  EXPECT_THROW(normalize({0}, {0}), InvalidArgument);
}

TEST(TransformsTest, ScaleAndCast) {
  EXPECT_EQ(scale(0.5f)(two_by_two()).features().to_vector<float>(), (std::vector<float>{0.5f, 5, 1.5f, 15}));
  Batch cast_labels = cast(Batch::kLabels, DType::f32)(two_by_two());
  EXPECT_EQ(cast_labels.labels().to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ(cast_tensor(Tensor::from_vector<float>(Shape{3}, {-1.7f, 0.2f, 2.9f}), DType::i64).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{-1, 0, 2}));
  EXPECT_THROW(scale(2.0f, Batch::kLabels)(two_by_two()), InvalidArgument);  // labels are i32
}

TEST(TransformsTest, FeatureStatsNormalizeToZeroMeanUnitSpread) {
  auto data = testing::counting_dataset(5);  // features {i, -i}, i = 0..4
  FeatureStats stats = compute_feature_stats(*data);
  EXPECT_FLOAT_EQ(stats.mean[0], 2.0f);
  EXPECT_FLOAT_EQ(stats.mean[1], -2.0f);
  EXPECT_FLOAT_EQ(stats.stddev[0], std::sqrt(2.0f));
  std::vector<std::int64_t> all = {0, 1, 2, 3, 4};
  Batch normalized = normalize(stats.mean, stats.stddev)(data->gather(all));
  EXPECT_FLOAT_EQ(normalized.features().to_vector<float>()[8], std::sqrt(2.0f));  // (4 - 2) / sqrt(2)
}

}  // namespace
}  // namespace trib::data
