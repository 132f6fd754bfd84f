#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "trib/optim/clip.h"
#include "trib/optim/regularization.h"

namespace trib {
namespace {

std::vector<Tensor> grads345() {
  // Global norm sqrt(9 + 16 + 144) = 13.
  return {Tensor::from_vector(Shape{2}, std::vector<float>{3, 4}), Tensor::from_vector(Shape{1}, std::vector<float>{12})};
}

TEST(ClipByGlobalNorm, ScalesAllGradientsByOneFactor) {
  std::vector<Tensor> g = grads345();
  EXPECT_DOUBLE_EQ(clip_by_global_norm(g, 6.5), 13.0);
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{1.5f, 2.0f}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{6.0f}));
  EXPECT_NEAR(global_norm(g), 6.5, 1e-6);
}

TEST(ClipByGlobalNorm, LeavesSmallGradientsAlone) {
  std::vector<Tensor> g = grads345();
  EXPECT_DOUBLE_EQ(clip_by_global_norm(g, 13.5), 13.0);
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{12.0f}));
}

TEST(ClipByGlobalNorm, LeavesNonFiniteGradientsForTheCallerToSee) {
  std::vector<Tensor> g = grads345();
  g[0].data<float>()[0] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(clip_by_global_norm(g, 1.0)));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{12.0f}));
}

TEST(ClipByGlobalNorm, RejectsANonPositiveLimit) {
  std::vector<Tensor> g = grads345();
  EXPECT_THROW(clip_by_global_norm(g, 0.0), InvalidArgument);
}

TEST(L2Regularization, AddsDecayTimesParamToTheGradient) {
  Tensor grad = Tensor::from_vector(Shape{2}, std::vector<float>{1, 1});
  Tensor param = Tensor::from_vector(Shape{2}, std::vector<float>{2, -4});
  add_l2_regularization(grad, param, 0.5f);
  EXPECT_EQ(grad.to_vector<float>(), (std::vector<float>{2, -1}));
  EXPECT_EQ(param.to_vector<float>(), (std::vector<float>{2, -4}));
}

}  // namespace
}  // namespace trib
