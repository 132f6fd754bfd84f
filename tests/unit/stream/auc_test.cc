#include "trib/stream/auc.h"

#include <vector>

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

TEST(AucTest, MatchesAHandComputedExampleWithTies) {
  // Positives score 0.8, 0.6, 0.4; negatives 0.6, 0.2. Of the 3 x 2 = 6 (positive, negative)
  // pairs, the positive wins 0.8>0.6, 0.8>0.2, 0.6>0.2, 0.4>0.2 and ties 0.6=0.6 (half):
  // AUC = (4 + 0.5) / 6 = 0.75.
  std::vector<float> scores = {0.8f, 0.6f, 0.4f, 0.6f, 0.2f};
  std::vector<std::int32_t> labels = {1, 1, 1, 0, 0};
  ASSERT_TRUE(auc(scores, labels).has_value());
  EXPECT_DOUBLE_EQ(*auc(scores, labels), 0.75);
}

TEST(AucTest, PerfectInvertedAndConstantScores) {
  std::vector<std::int32_t> labels = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(*auc(std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f}, labels), 1.0);
  EXPECT_DOUBLE_EQ(*auc(std::vector<float>{0.4f, 0.3f, 0.2f, 0.1f}, labels), 0.0);
  EXPECT_DOUBLE_EQ(*auc(std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}, labels), 0.5);
}

TEST(AucTest, UndefinedForOneClassAndRejectsBadInput) {
  EXPECT_FALSE(auc(std::vector<float>{0.1f, 0.9f}, std::vector<std::int32_t>{1, 1}).has_value());
  EXPECT_FALSE(auc(std::vector<float>{}, std::vector<std::int32_t>{}).has_value());
  EXPECT_THROW(auc(std::vector<float>{0.1f}, std::vector<std::int32_t>{0, 1}), InvalidArgument);
  EXPECT_THROW(auc(std::vector<float>{0.1f, 0.2f}, std::vector<std::int32_t>{0, 2}), InvalidArgument);
}

}  // namespace
}  // namespace trib::stream
