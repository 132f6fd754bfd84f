#include <gtest/gtest.h>

#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/autodiff.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

// Inputs x, gamma, beta, running_mean, running_var; positive variances.
std::vector<Tensor> bn_inputs(const Shape& x, Rng& rng) {
  Shape c{x[1]};
  return {random_tensor(x, rng, -2, 3), random_tensor(c, rng, 0.5f, 1.5f),
          random_tensor(c, rng, -0.5f, 0.5f), random_tensor(c, rng, -0.3f, 0.3f),
          random_tensor(c, rng, 0.5f, 2.0f)};
}

// Output `which` of batch_norm: 0 y, 1 batch_mean, 2 batch_var.
testing::OpBuilder build(int which) {
  return [which](Graph& g, std::span<const Value> v) {
    ops::BatchNormOutputs out = ops::batch_norm(g, v[0], v[1], v[2], v[3], v[4]);
    return which == 0 ? out.y : which == 1 ? out.batch_mean : out.batch_var;
  };
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s{Shape{4, 3, 5, 7}, Shape{1, 3, 7, 9}, Shape{6, 5},
                                    Shape{2, 3, 4}, Shape{3, 16, 4, 4}};
  return s;
}

TEST(BatchNorm, MatchesReference) {
  Rng rng(51);
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(s.to_string());
    auto in = bn_inputs(s, rng);
    for (bool training : {true, false})
      for (int which = 0; which < 3; ++which)
        testing::expect_fast_matches_reference(build(which), in, 1e-4f, training);
  }
}

TEST(BatchNorm, GradientsMatchNumeric) {
  Rng rng(52);
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(s.to_string());
    auto in = bn_inputs(s, rng);
    testing::expect_gradients_match_numeric(build(0), in, {0, 1, 2});
    testing::expect_gradients_match_numeric(build(0), in, {0, 1, 2}, {.training = false});
  }
}

TEST(BatchNorm, BackwardMatchesReference) {
  Rng rng(53);
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(s.to_string());
    auto in = bn_inputs(s, rng);
    in.push_back(random_tensor(s, rng));  // dy
    for (int which = 0; which < 3; ++which) {
      auto backward = [which](Graph& g, std::span<const Value> v) {
        ops::BatchNormOutputs f = ops::batch_norm(g, v[0], v[1], v[2], v[3], v[4]);
        auto d = ops::backward::batch_norm(g, v[5], v[0], v[1], v[2], f.batch_mean, f.batch_var,
                                          1e-5f);
        return which == 0 ? d.dx : which == 1 ? d.dgamma : d.dbeta;
      };
      for (bool training : {true, false})
        testing::expect_fast_matches_reference(backward, in, 1e-4f, training);
    }
  }
}

TEST(BatchNorm, StatisticsOfTheBatchWhileTrainingAndRunningOnesAtInference) {
  // Channel 0 holds 1..4, channel 1 holds 10 everywhere.
  Tensor x = Tensor::from_vector<float>(Shape{2, 2, 2}, {1, 2, 10, 10, 3, 4, 10, 10});
  Tensor ones = Tensor::full(Shape{2}, 1.0f), zeros = Tensor::full(Shape{2}, 0.0f);
  Tensor running_mean = Tensor::from_vector<float>(Shape{2}, {0.5f, -0.5f});
  std::vector<Tensor> in{x, ones, zeros, running_mean, ones};
  for (bool reference : {false, true}) {
    EXPECT_EQ(testing::run_op(build(1), in, true, reference).to_vector<float>(),
              (std::vector<float>{2.5f, 10.0f}));
    EXPECT_EQ(testing::run_op(build(2), in, true, reference).to_vector<float>(),
              (std::vector<float>{1.25f, 0.0f}));
    EXPECT_EQ(testing::run_op(build(1), in, false, reference).to_vector<float>(),
              running_mean.to_vector<float>());
  }
}

TEST(BatchNorm, StatisticsOutputsAreNotDifferentiable) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{4, 3}});
  Value c = g.placeholder("c", {DType::f32, Shape{3}});
  ops::BatchNormOutputs out = ops::batch_norm(g, x, c, c, c, c, 1e-5f, "bn");
  Value loss = ops::sum(g, out.batch_mean);
  std::vector<Value> wrt{x};
  EXPECT_THROW(gradients(g, loss, wrt), InvalidArgument);
}

TEST(BatchNorm, RejectsChannelMismatch) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{4, 3, 2, 2}});
  Value c3 = g.placeholder("c3", {DType::f32, Shape{3}});
  Value c4 = g.placeholder("c4", {DType::f32, Shape{4}});
  EXPECT_THROW(ops::batch_norm(g, x, c4, c3, c3, c3), ShapeError);
}

}  // namespace
}  // namespace trib
