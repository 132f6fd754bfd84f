#include "optimizer_test_util.h"
#include "trib/optim/adagrad.h"
#include "trib/optim/rmsprop.h"

namespace trib {
namespace {

using testing::expect_steps;

TEST(Adagrad, StepsAgainstTheDefinition) {
  // sum += g^2; p -= 0.1 g / sqrt(sum). element 0: sum 0.25 -> p 1 - 0.1 = 0.9;
  // sum 0.26 -> p 0.9 - 0.01 / 0.5099 = 0.880388; sum 0.35 -> p + 0.03 / 0.5916 = 0.931098.
  expect_steps(Adagrad(), {{{0.9f, -1.9f}, {0.880388387f, -1.91961161f}, {0.931097642f, -1.95612645f}}});
}

TEST(Adagrad, StartsFromTheInitialAccumulator) {
  // sum = 0.75 + 0.25 = 1: p = 1 - 0.1 * 0.5 = 0.95.
  SlotStore slots;
  Tensor p = Tensor::from_vector(Shape{2}, testing::kP0);
  Adagrad(AdagradOptions{.initial_accumulator = 0.75f})
      .apply("w", p, Tensor::from_vector(Shape{2}, testing::kGrads[0]), slots, 0.1f);
  EXPECT_NEAR(p.data<float>()[0], 0.95f, 1e-6f);
}

TEST(RmsProp, StepsAgainstTheDefinition) {
  // alpha = 0.99: sq = 0.01 g^2, so the first step is p -= 0.1 g / (|g| / 10) = p - sign(g):
  // element 0: 1 -> 0 (2e-7 from eps). Then sq = 0.99 * 0.0025 + 0.01 * 0.01 = 0.002575,
  // p = 0 - 0.1 * 0.1 / 0.0507445 = -0.1970656.
  expect_steps(RmsProp(), {{{2.0e-7f, -1.0000001f}, {-0.197065617f, -1.19706594f}, {0.31374374f, -1.56534257f}}},
               1e-5f);
}

TEST(RmsProp, MomentumStepsAgainstTheDefinition) {
  // buf = 0.5 buf + g / avg; p -= 0.1 buf. Step 2, element 0: buf = 0.5 * 10 + 1.970656 = 6.970656,
  // p = 2e-7 - 0.6970656.
  expect_steps(RmsProp(RmsPropOptions{.momentum = 0.5f}),
               {{{2.0e-7f, -1.0000001f}, {-0.697065517f, -0.697065986f}, {-0.534789018f, -0.91387556f}}}, 1e-5f);
}

TEST(RmsProp, CenteredKeepsTheGradientAverage) {
  // Step 1: sq = 0.0025, ga = 0.005, avg = sqrt(0.0025 - 0.000025) = 0.0497494,
  // p = 1 - 0.1 * 0.5 / 0.0497494 = -0.0050378.
  SlotStore slots;
  Tensor p = Tensor::from_vector(Shape{2}, testing::kP0);
  RmsProp(RmsPropOptions{.centered = true}).apply("w", p, Tensor::from_vector(Shape{2}, testing::kGrads[0]), slots, 0.1f);
  EXPECT_NEAR(p.data<float>()[0], -0.0050378f, 1e-5f);
  EXPECT_TRUE(slots.contains("w", "grad_avg"));
  EXPECT_FALSE(slots.contains("w", "momentum"));
}

}  // namespace
}  // namespace trib
