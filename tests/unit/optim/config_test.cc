#include <gtest/gtest.h>

#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"

namespace trib {
namespace {

TEST(MakeOptimizer, BuildsEveryNamedOptimizer) {
  for (const std::string& name : optimizer_names()) {
    EXPECT_EQ(make_optimizer(OptimizerConfig{.name = name})->name(), name);
  }
}

TEST(MakeOptimizer, SgdWithMomentumIsTheMomentumOptimizer) {
  EXPECT_EQ(make_optimizer(OptimizerConfig{.name = "sgd", .momentum = 0.9f, .nesterov = true})->name(), "momentum");
  EXPECT_THROW(make_optimizer(OptimizerConfig{.name = "sgd", .nesterov = true}), InvalidArgument);
}

TEST(MakeOptimizer, UnknownNameListsTheValidOnes) {
  try {
    make_optimizer(OptimizerConfig{.name = "adamax"});
    FAIL() << "adamax accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "unknown optimizer 'adamax': valid names are sgd, momentum, adam, adamw, adagrad, rmsprop");
  }
}

TEST(MakeOptimizer, RejectsOutOfRangeHyperparameters) {
  EXPECT_THROW(make_optimizer(OptimizerConfig{.name = "adam", .eps = -1.0f}), InvalidArgument);
  EXPECT_THROW(make_optimizer(OptimizerConfig{.name = "rmsprop", .alpha = 1.5f}), InvalidArgument);
}

TEST(MakeSchedule, WarmUpThenCosineWithLinearScaling) {
  // Base 0.1 scaled by 1024 / 256 = 0.4; 4 warm-up steps from 0; cosine over 10 steps to 0.04.
  ScheduleConfig c{.name = "cosine", .base_lr = 0.1f, .total_steps = 10, .min_lr = 0.04f, .warmup_steps = 4,
                   .linear_scaling = true, .global_batch = 1024, .base_batch = 256};
  auto s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr(0), 0.0f);
  EXPECT_FLOAT_EQ(s->lr(2), 0.2f);
  EXPECT_FLOAT_EQ(s->lr(4), 0.4f);
  EXPECT_FLOAT_EQ(s->lr(9), 0.22f);   // halfway: 0.04 + 0.36 / 2
  EXPECT_FLOAT_EQ(s->lr(14), 0.04f);
  EXPECT_FLOAT_EQ(s->lr(100), 0.04f);
}

TEST(MakeSchedule, UnknownNameListsTheValidOnes) {
  try {
    make_schedule(ScheduleConfig{.name = "poly"});
    FAIL() << "poly accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "unknown learning-rate schedule 'poly': valid names are constant, step, exponential, cosine");
  }
}

TEST(MakeSchedule, LinearScalingNeedsBothBatchSizes) {
  EXPECT_THROW(make_schedule(ScheduleConfig{.linear_scaling = true, .global_batch = 64}), InvalidArgument);
}

}  // namespace
}  // namespace trib
