#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

testing::OpBuilder dropout(float rate, std::uint64_t seed) {
  return [=](Graph& g, std::span<const Value> x) { return ops::dropout(g, x[0], rate, seed); };
}

TEST(Dropout, DropsAboutRateAndScalesTheRest) {
  Rng rng(41);
  Tensor x = random_tensor(Shape{200, 501}, rng, 0.5f, 1.5f);
  for (bool reference : {false, true}) {
    Tensor y = testing::run_op(dropout(0.3f, 9), {x}, true, reference);
    std::int64_t dropped = 0;
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      float v = y.data<float>()[i];
      if (v == 0.0f) ++dropped;
      else ASSERT_FLOAT_EQ(v, x.data<float>()[i] / 0.7f);
    }
    EXPECT_NEAR(double(dropped) / double(x.numel()), 0.3, 0.005);
  }
}

TEST(Dropout, MatchesReferenceAndGradient) {
  Rng rng(42);
  for (Shape s : {Shape{1}, Shape{7, 13}, Shape{3, 5, 7}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{random_tensor(s, rng)};
    testing::expect_fast_matches_reference(dropout(0.5f, 3), in);
    testing::expect_gradients_match_numeric(dropout(0.5f, 3), in, {0});
    testing::expect_gradients_match_numeric(dropout(0.25f, 4), in, {0}, {.training = false});
  }
}

TEST(Dropout, IdentityAtInference) {
  Rng rng(43);
  Tensor x = random_tensor(Shape{7, 13}, rng);
  for (bool reference : {false, true}) {
    Tensor y = testing::run_op(dropout(0.5f, 1), {x}, /*training=*/false, reference);
    EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  }
}

TEST(Dropout, MaskDependsOnSeedAndStepOnly) {
  Rng rng(44);
  Shape s{64, 33};
  Tensor x = Tensor::full(s, 1.0f);
  // Same seed, same step (a fresh executor is at step 1): the same mask.
  EXPECT_EQ(testing::run_op(dropout(0.5f, 5), {x}).to_vector<float>(),
            testing::run_op(dropout(0.5f, 5), {x}).to_vector<float>());
  EXPECT_NE(testing::run_op(dropout(0.5f, 5), {x}).to_vector<float>(),
            testing::run_op(dropout(0.5f, 6), {x}).to_vector<float>());
  // The next step of one executor draws a new mask.
  Graph g;
  Value in = g.placeholder("x", {DType::f32, s});
  Executor exec(g, {ops::dropout(g, in, 0.5f, 5)}, testing::test_engine());
  VariableStore vars;
  std::vector<Feed> feeds{{in, x}};
  auto first = exec.run(feeds, vars)[0].to_vector<float>();
  auto second = exec.run(feeds, vars)[0].to_vector<float>();
  EXPECT_EQ(first, testing::run_op(dropout(0.5f, 5), {x}).to_vector<float>());
  EXPECT_NE(first, second);
}

TEST(Dropout, RejectsRateOutsideUnitInterval) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{3}});
  EXPECT_THROW(ops::dropout(g, x, 1.0f, 0), InvalidArgument);
  EXPECT_THROW(ops::dropout(g, x, -0.1f, 0), InvalidArgument);
}

}  // namespace
}  // namespace trib
