#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

Value build_forward(Graph& g, bool log, Value x) {
  return log ? ops::log_softmax(g, x) : ops::softmax(g, x);
}

class SoftmaxTest : public ::testing::TestWithParam<bool> {};  // param: log

TEST_P(SoftmaxTest, MatchesReferenceAndGradient) {
  const bool log = GetParam();
  Rng rng(3);
  for (Shape s : {Shape{1, 1}, Shape{13}, Shape{7, 13}, Shape{3, 4, 9}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{random_tensor(s, rng, -3, 3)};
    auto build = [log](Graph& g, std::span<const Value> x) { return build_forward(g, log, x[0]); };
    testing::expect_fast_matches_reference(build, in);
    testing::expect_fast_matches_reference(build, in, 1e-4f, /*training=*/false);
    testing::expect_gradients_match_numeric(build, in, {0});
  }
}

TEST_P(SoftmaxTest, BackwardMatchesReference) {
  const bool log = GetParam();
  Rng rng(4);
  for (Shape s : {Shape{1, 1}, Shape{7, 13}, Shape{2, 5, 3}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{random_tensor(s, rng, -3, 3), random_tensor(s, rng)};
    testing::expect_fast_matches_reference(
        [log](Graph& g, std::span<const Value> x) {
          return ops::backward::softmax(g, x[1], build_forward(g, log, x[0]), log);
        },
        in);
  }
}

TEST_P(SoftmaxTest, StableForHugeLogits) {
  const bool log = GetParam();
  Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {1000, 999, -1000, -1000, -1001, 5});
  for (bool reference : {false, true}) {
    Tensor y = testing::run_op(
        [log](Graph& g, std::span<const Value> v) { return build_forward(g, log, v[0]); }, {x},
        true, reference);
    for (float v : y.span<float>()) EXPECT_TRUE(std::isfinite(v)) << v;
    float p0 = log ? std::exp(y.data<float>()[0]) : y.data<float>()[0];
    EXPECT_NEAR(p0, 1.0 / (1.0 + std::exp(-1.0)), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, SoftmaxTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "log_softmax" : "softmax"; });

TEST(Softmax, RowsSumToOne) {
  Rng rng(5);
  Tensor y = testing::run_op([](Graph& g, std::span<const Value> x) { return ops::softmax(g, x[0]); },
                             {random_tensor(Shape{5, 11}, rng, -4, 4)});
  for (int r = 0; r < 5; ++r) {
    double s = 0;
    for (int i = 0; i < 11; ++i) s += y.data<float>()[r * 11 + i];
    EXPECT_NEAR(s, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace trib
