// LocalUpdate's guard: a step whose gradients hold a NaN or an Inf anywhere is skipped. The
// check runs vectorised in blocks, so every position in and after a block is tried.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "update/all_finite.h"

namespace trib::update {
namespace {

GradTensor dense(std::vector<float> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return {Tensor::from_vector(Shape{n}, values), {}};
}

TEST(AllFinite, FindsANonFiniteValueAtEveryPosition) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (std::size_t n : {1u, 7u, 16u, 31u, 32u, 33u, 100u}) {
    for (std::size_t at = 0; at < n; ++at)
      for (float b : bad) {
        std::vector<float> v(n, 1.5f);
        v[at] = b;
        EXPECT_FALSE(all_finite({dense({0.5f, -2.0f}), dense(v)})) << "n " << n << " at " << at << " value " << b;
      }
  }
}

TEST(AllFinite, AcceptsEveryFiniteValue) {
  const float edge[] = {0.0f, -0.0f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(), 1e-40f};
  std::vector<float> v;
  for (int i = 0; i < 50; ++i) v.push_back(edge[i % 7]);
  EXPECT_TRUE(all_finite({dense(v), dense({1.0f})}));
  EXPECT_TRUE(all_finite({}));
}

}  // namespace
}  // namespace trib::update
