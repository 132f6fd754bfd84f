#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

TEST(ScaleOp, MatchesReferenceAndGradient) {
  Rng rng(1);
  for (Shape s : {Shape{1}, Shape{7, 13}, Shape{3, 5, 17}}) {
    std::vector<Tensor> in{random_tensor(s, rng)};
    auto build = [](Graph& g, std::span<const Value> x) { return ops::scale(g, x[0], -2.5f); };
    testing::expect_fast_matches_reference(build, in);
    testing::expect_gradients_match_numeric(build, in, {0});
  }
}

TEST(FillOp, FillsEveryElement) {
  Tensor t = testing::run_op(
      [](Graph& g, std::span<const Value>) { return ops::fill(g, {DType::f32, Shape{4, 3}}, 1.5f); }, {});
  for (float v : t.span<float>()) EXPECT_EQ(v, 1.5f);
}

}  // namespace
}  // namespace trib
