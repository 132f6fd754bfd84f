// Runs an optimizer for a few dense steps on a two-element variable and checks the variable
// after each step against numbers worked out by hand from the optimizer's definition.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "trib/optim/optimizer.h"

namespace trib::testing {

// The shared problem: p0 = [1, -2], gradients g1 = [0.5, -1], g2 = [0.1, 0.2],
// g3 = [-0.3, 0.4], learning rate 0.1.
inline constexpr float kLr = 0.1f;
inline const std::vector<float> kP0 = {1.0f, -2.0f};
inline const std::array<std::vector<float>, 3> kGrads = {{{0.5f, -1.0f}, {0.1f, 0.2f}, {-0.3f, 0.4f}}};

inline void expect_steps(const Optimizer& opt, const std::array<std::array<float, 2>, 3>& expected,
                         float tolerance = 2e-6f) {
  SlotStore slots;
  Tensor p = Tensor::from_vector(Shape{2}, kP0);
  for (std::size_t step = 0; step < 3; ++step) {
    opt.apply("w", p, Tensor::from_vector(Shape{2}, kGrads[step]), slots, kLr);
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(p.data<float>()[i], expected[step][i], tolerance)
          << opt.name() << " step " << step + 1 << " element " << i;
    }
  }
}

}  // namespace trib::testing
