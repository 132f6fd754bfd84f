#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "trib/core/error.h"
#include "trib/optim/schedule.h"

namespace trib {
namespace {

TEST(Schedule, Constant) {
  ConstantSchedule s(0.3f);
  EXPECT_FLOAT_EQ(s.lr(0), 0.3f);
  EXPECT_FLOAT_EQ(s.lr(1000000), 0.3f);
}

TEST(Schedule, StepMultipliesByGammaEveryKSteps) {
  StepSchedule s(1.0f, 3, 0.1f);
  EXPECT_FLOAT_EQ(s.lr(0), 1.0f);
  EXPECT_FLOAT_EQ(s.lr(2), 1.0f);
  EXPECT_FLOAT_EQ(s.lr(3), 0.1f);
  EXPECT_FLOAT_EQ(s.lr(5), 0.1f);
  EXPECT_FLOAT_EQ(s.lr(6), 0.01f);
  EXPECT_THROW(StepSchedule(1.0f, 0, 0.1f), InvalidArgument);
}

TEST(Schedule, ExponentialDecaysContinuously) {
  ExponentialSchedule per_step(2.0f, 0.5f);
  EXPECT_FLOAT_EQ(per_step.lr(0), 2.0f);
  EXPECT_FLOAT_EQ(per_step.lr(3), 0.25f);
  ExponentialSchedule per_two(1.0f, 0.5f, 2);
  EXPECT_FLOAT_EQ(per_two.lr(1), std::sqrt(0.5f));
  EXPECT_FLOAT_EQ(per_two.lr(2), 0.5f);
}

TEST(Schedule, CosineFallsToItsMinimum) {
  CosineSchedule s(1.0f, 10, 0.1f);
  EXPECT_FLOAT_EQ(s.lr(0), 1.0f);
  EXPECT_FLOAT_EQ(s.lr(5), 0.55f);                                         // cos(pi/2) = 0
  EXPECT_FLOAT_EQ(s.lr(2), 0.1f + 0.9f * 0.5f * (1 + std::cos(0.2 * std::numbers::pi)));  // 0.9140576
  EXPECT_FLOAT_EQ(s.lr(10), 0.1f);
  EXPECT_FLOAT_EQ(s.lr(50), 0.1f);
}

TEST(Schedule, WarmUpRisesLinearlyThenHandsOver) {
  WarmupSchedule s(std::make_unique<StepSchedule>(1.0f, 2, 0.5f), 4);
  EXPECT_FLOAT_EQ(s.lr(0), 0.0f);
  EXPECT_FLOAT_EQ(s.lr(1), 0.25f);
  EXPECT_FLOAT_EQ(s.lr(3), 0.75f);
  EXPECT_FLOAT_EQ(s.lr(4), 1.0f);   // the step schedule's step 0
  EXPECT_FLOAT_EQ(s.lr(6), 0.5f);   // its step 2
}

TEST(Schedule, WarmUpFromAStartFactor) {
  WarmupSchedule s(std::make_unique<ConstantSchedule>(2.0f), 5, 0.5f);
  EXPECT_FLOAT_EQ(s.lr(0), 1.0f);
  EXPECT_FLOAT_EQ(s.lr(1), 1.2f);
  EXPECT_FLOAT_EQ(s.lr(5), 2.0f);
}

TEST(Schedule, LinearScalingRule) {
  EXPECT_FLOAT_EQ(linear_scaled_lr(0.1f, 1024, 256), 0.4f);
  EXPECT_FLOAT_EQ(linear_scaled_lr(0.1f, 128, 256), 0.05f);
  EXPECT_THROW(linear_scaled_lr(0.1f, 0, 256), InvalidArgument);
}

}  // namespace
}  // namespace trib
