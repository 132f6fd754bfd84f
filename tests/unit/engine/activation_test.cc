#include <gtest/gtest.h>

#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using ops::backward::Activation;
using testing::random_tensor;

Value build_forward(Graph& g, Activation kind, Value x) {
  switch (kind) {
    case Activation::relu: return ops::relu(g, x);
    case Activation::sigmoid: return ops::sigmoid(g, x);
    case Activation::tanh: return ops::tanh(g, x);
  }
  return {};
}

// Random values at least 0.1 away from 0, so finite differences never straddle relu's kink.
Tensor away_from_zero(const Shape& s, Rng& rng) {
  Tensor t = random_tensor(s, rng, 0.1f, 2.0f);
  for (float& v : t.span<float>()) v = rng.uniform() < 0.5f ? -v : v;
  return t;
}

class ActivationTest : public ::testing::TestWithParam<Activation> {};

TEST_P(ActivationTest, MatchesReferenceAndGradient) {
  const Activation kind = GetParam();
  Rng rng(7);
  for (Shape s : {Shape{1}, Shape{7, 13}, Shape{2, 3, 7, 9}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{away_from_zero(s, rng)};
    auto build = [kind](Graph& g, std::span<const Value> x) { return build_forward(g, kind, x[0]); };
    testing::expect_fast_matches_reference(build, in);
    testing::expect_fast_matches_reference(build, in, 1e-4f, /*training=*/false);
    testing::expect_gradients_match_numeric(build, in, {0});
  }
}

TEST_P(ActivationTest, BackwardMatchesReference) {
  const Activation kind = GetParam();
  Rng rng(8);
  for (Shape s : {Shape{1}, Shape{7, 13}, Shape{3, 5, 7}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{random_tensor(s, rng, -3, 3), random_tensor(s, rng)};
    testing::expect_fast_matches_reference(
        [kind](Graph& g, std::span<const Value> x) {
          return ops::backward::activation(g, kind, x[1], build_forward(g, kind, x[0]));
        },
        in);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ActivationTest,
                         ::testing::Values(Activation::relu, Activation::sigmoid, Activation::tanh),
                         [](const auto& info) {
                           switch (info.param) {
                             case Activation::relu: return std::string("relu");
                             case Activation::sigmoid: return std::string("sigmoid");
                             case Activation::tanh: return std::string("tanh");
                           }
                           return std::string("unknown");
                         });

TEST(Relu, RunsInPlaceOnAnIntermediate) {
  // 64 KiB: a pool size class of its own, so the peak counts whole tensors.
  const Shape s{16384};
  Graph g;
  Value x = g.placeholder("x", {DType::f32, s});
  Value y = ops::relu(g, ops::scale(g, x, 2.0f));
  Executor exec(g, {y}, testing::test_engine());
  VariableStore vars;
  Rng rng(1);
  Tensor xv = random_tensor(s, rng);
  std::vector<Feed> feeds{{x, xv}};
  Tensor out = exec.run(feeds, vars)[0];
  EXPECT_LT(exec.last_peak_bytes(), 2 * xv.nbytes()) << "relu should overwrite scale's output";
  for (std::int64_t i = 0; i < s.numel(); ++i)
    ASSERT_EQ(out.data<float>()[i], std::max(0.0f, 2.0f * xv.data<float>()[i]));
}

TEST(Activation, RejectsIntegerInput) {
  Graph g;
  Value x = g.placeholder("ids", {DType::i32, Shape{4}});
  EXPECT_THROW(ops::relu(g, x), ShapeError);
}

}  // namespace
}  // namespace trib
