#include "optimizer_test_util.h"
#include "trib/optim/momentum.h"
#include "trib/optim/sgd.h"

namespace trib {
namespace {

using testing::expect_steps;

TEST(Sgd, StepsAgainstTheDefinition) {
  // p -= 0.1 * g: 1 - 0.05 = 0.95, 0.95 - 0.01 = 0.94, 0.94 + 0.03 = 0.97.
  expect_steps(Sgd(), {{{0.95f, -1.9f}, {0.94f, -1.92f}, {0.97f, -1.96f}}});
}

TEST(Sgd, WeightDecayIsL2InTheGradient) {
  // g' = g + 0.5 * p: [0.5 + 0.5, -1 - 1] = [1, -2], so p = [0.9, -1.8] after one step.
  SlotStore slots;
  Tensor p = Tensor::from_vector(Shape{2}, testing::kP0);
  Sgd(SgdOptions{.weight_decay = 0.5f}).apply("w", p, Tensor::from_vector(Shape{2}, testing::kGrads[0]), slots, 0.1f);
  EXPECT_NEAR(p.data<float>()[0], 0.9f, 1e-6f);
  EXPECT_NEAR(p.data<float>()[1], -1.8f, 1e-6f);
  EXPECT_EQ(slots.size(), 0u);  // plain SGD keeps no state
}

TEST(Momentum, StepsAgainstTheDefinition) {
  // buf = 0.9 buf + g; p -= 0.1 buf.
  // element 0: buf 0.5 -> p 0.95; buf 0.45 + 0.1 = 0.55 -> p 0.895; buf 0.495 - 0.3 = 0.195 -> 0.8755.
  expect_steps(Momentum(MomentumOptions{.momentum = 0.9f}),
               {{{0.95f, -1.9f}, {0.895f, -1.83f}, {0.8755f, -1.807f}}});
}

TEST(Momentum, NesterovStepsAgainstTheDefinition) {
  // p -= 0.1 (g + 0.9 buf). element 0: step 1 buf 0.5, update 0.5 + 0.45 = 0.95 -> 0.905;
  // step 2 buf 0.55, update 0.1 + 0.495 = 0.595 -> 0.8455; step 3 buf 0.195, update -0.1245 -> 0.85795.
  expect_steps(Momentum(MomentumOptions{.momentum = 0.9f, .nesterov = true}),
               {{{0.905f, -1.81f}, {0.8455f, -1.767f}, {0.85795f, -1.7863f}}});
}

TEST(Momentum, KeepsItsBufferInTheSlotStore) {
  SlotStore slots;
  Tensor p = Tensor::from_vector(Shape{2}, testing::kP0);
  Momentum opt(MomentumOptions{.momentum = 0.9f});
  opt.apply("layer/w", p, Tensor::from_vector(Shape{2}, testing::kGrads[0]), slots, 0.1f);
  opt.apply("layer/w", p, Tensor::from_vector(Shape{2}, testing::kGrads[1]), slots, 0.1f);
  std::vector<float> buf = slots.get("layer/w", "momentum").to_vector<float>();
  EXPECT_NEAR(buf[0], 0.55f, 1e-6f);  // 0.9 * 0.5 + 0.1
  EXPECT_NEAR(buf[1], -0.7f, 1e-6f);  // 0.9 * -1 + 0.2
}

TEST(Momentum, RejectsMomentumOfOne) {
  EXPECT_THROW(Momentum(MomentumOptions{.momentum = 1.0f}), InvalidArgument);
}

}  // namespace
}  // namespace trib
