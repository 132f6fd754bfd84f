#include "optimizer_test_util.h"
#include "trib/optim/adam.h"
#include "trib/optim/adamw.h"

namespace trib {
namespace {

using testing::expect_steps;

TEST(Adam, StepsAgainstTheDefinition) {
  // Step 1, element 0: m = 0.1 * 0.5 = 0.05, v = 0.001 * 0.25 = 0.00025; bias-corrected
  // m^ = 0.05 / 0.1 = 0.5, v^ = 0.00025 / 0.001 = 0.25, so p = 1 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.9.
  // Steps 2 and 3 follow from the same formulas with t = 2, 3.
  expect_steps(Adam(), {{{0.9f, -1.9f}, {0.819695906f, -1.84889739f}, {0.798624612f, -1.83547343f}}});
}

TEST(Adam, WeightDecayIsL2InTheGradient) {
  // g' = g + 0.1 p. Step 1 is the same as without decay (Adam's first step has length lr in
  // every element whatever the gradient's size); from step 2 the decayed gradient shows.
  expect_steps(Adam(AdamOptions{.weight_decay = 0.1f}),
               {{{0.9f, -1.9f}, {0.813648345f, -1.83361691f}, {0.771581821f, -1.79448022f}}});
}

TEST(Adam, CountsStepsPerVariable) {
  SlotStore slots;
  Adam opt;
  Tensor a = Tensor::from_vector(Shape{2}, testing::kP0);
  Tensor b = Tensor::from_vector(Shape{1}, std::vector<float>{3.0f});
  opt.apply("a", a, Tensor::from_vector(Shape{2}, testing::kGrads[0]), slots, 0.1f);
  opt.apply("a", a, Tensor::from_vector(Shape{2}, testing::kGrads[1]), slots, 0.1f);
  opt.apply("b", b, Tensor::from_vector(Shape{1}, std::vector<float>{1.0f}), slots, 0.1f);
  EXPECT_EQ(slots.get("a", "step").item(), 2);
  EXPECT_EQ(slots.get("b", "step").item(), 1);
  EXPECT_NEAR(b.data<float>()[0], 2.9f, 1e-6f);  // b's first step is a first step
}

TEST(AdamW, DecoupledDecayStepsAgainstTheDefinition) {
  // p *= 1 - 0.1 * 0.1 first, then the Adam step on the raw gradient:
  // step 1, element 0: 1 * 0.99 - 0.1 = 0.89.
  expect_steps(AdamW(AdamOptions{.weight_decay = 0.1f}),
               {{{0.89f, -1.88f}, {0.800795906f, -1.81009739f}, {0.771716653f, -1.77857246f}}});
}

TEST(AdamW, DefaultsToPyTorchWeightDecay) {
  // 0.01 decay: 1 * (1 - 0.1 * 0.01) - 0.1 = 0.899.
  SlotStore slots;
  Tensor p = Tensor::from_vector(Shape{2}, testing::kP0);
  AdamW().apply("w", p, Tensor::from_vector(Shape{2}, testing::kGrads[0]), slots, 0.1f);
  EXPECT_NEAR(p.data<float>()[0], 0.899f, 1e-6f);
}

TEST(Adam, RejectsBetaOfOne) {
  try {
    Adam(AdamOptions{.beta1 = 1.0f});
    FAIL() << "beta1 = 1 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("beta1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trib
