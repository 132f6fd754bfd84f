#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

struct MatmulCase {
  std::int64_t m, k, n;
};

// The stored shape of an operand that is `rows x cols` after its optional transpose.
Shape stored(std::int64_t rows, std::int64_t cols, bool transposed) {
  return transposed ? Shape{cols, rows} : Shape{rows, cols};
}

TEST(MatmulOp, MatchesReferenceForEveryTransposeAndOddSizes) {
  Rng rng(7);
  for (MatmulCase c : {MatmulCase{7, 13, 5}, {1, 1, 1}, {1, 784, 10}, {64, 33, 17}, {3, 5, 17}, {129, 70, 65}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << "x" << c.n << " ta=" << ta << " tb=" << tb);
        std::vector<Tensor> in{random_tensor(stored(c.m, c.k, ta), rng), random_tensor(stored(c.k, c.n, tb), rng)};
        auto build = [=](Graph& g, std::span<const Value> x) { return ops::matmul(g, x[0], x[1], ta, tb); };
        testing::expect_fast_matches_reference(build, in);
      }
  }
}

TEST(MatmulOp, GradientsMatchNumericForEveryTranspose) {
  Rng rng(8);
  for (MatmulCase c : {MatmulCase{7, 13, 5}, {1, 4, 3}, {1, 1, 1}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << "x" << c.n << " ta=" << ta << " tb=" << tb);
        std::vector<Tensor> in{random_tensor(stored(c.m, c.k, ta), rng), random_tensor(stored(c.k, c.n, tb), rng)};
        auto build = [=](Graph& g, std::span<const Value> x) { return ops::matmul(g, x[0], x[1], ta, tb); };
        testing::expect_gradients_match_numeric(build, in, {0, 1});
      }
  }
}

TEST(MatmulOp, KnownProduct) {
  Tensor a = Tensor::from_vector<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>(Shape{3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor y = testing::run_op([](Graph& g, std::span<const Value> x) { return ops::matmul(g, x[0], x[1]); }, {a, b});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{58, 64, 139, 154}));
}

TEST(MatmulOp, InnerDimensionMismatchNamesBothNodesAndShapes) {
  Graph g;
  Value a = g.placeholder("a", {DType::f32, Shape{2, 3}});
  Value b = g.placeholder("b", {DType::f32, Shape{4, 5}});
  try {
    ops::matmul(g, a, b, false, false, "mm");
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    for (const char* part : {"'mm'", "'a'", "'b'", "[2, 3]", "[4, 5]", "inner dimensions 3 and 4 differ"})
      EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  }
}

TEST(MatmulOp, RejectsNonMatrices) {
  Graph g;
  Value a = g.placeholder("a", {DType::f32, Shape{2, 3, 4}});
  Value b = g.placeholder("b", {DType::f32, Shape{4, 5}});
  EXPECT_THROW(ops::matmul(g, a, b), ShapeError);
}

TEST(MatmulOp, ReusesItsPrimitiveAcrossRunsAndEngines) {
  // The cached primitive is built by the first run; later runs, and a second engine context
  // running the same graph, must give the same numbers.
  Rng rng(9);
  Graph g;
  Value a = g.placeholder("a", {DType::f32, Shape{33, 20}});
  Value b = g.placeholder("b", {DType::f32, Shape{20, 9}});
  Value y = ops::matmul(g, a, b);
  std::vector<Feed> feeds{{a, random_tensor(Shape{33, 20}, rng)}, {b, random_tensor(Shape{20, 9}, rng)}};
  VariableStore vars;
  Executor first(g, {y}, testing::test_engine());
  std::vector<float> expected = first.run(feeds, vars)[0].to_vector<float>();
  EXPECT_EQ(first.run(feeds, vars)[0].to_vector<float>(), expected);
  EngineContext other(EngineOptions{1, 1});
  Executor second(g, {y}, other);
  std::vector<float> again = second.run(feeds, vars)[0].to_vector<float>();
  ASSERT_EQ(again.size(), expected.size());
  for (std::size_t i = 0; i < again.size(); ++i) EXPECT_NEAR(again[i], expected[i], 1e-5f);
}

TEST(MatmulOp, EmptyInnerDimensionGivesZeros) {
  Tensor a = Tensor::zeros(DType::f32, Shape{2, 0});
  Tensor b = Tensor::zeros(DType::f32, Shape{0, 3});
  Tensor y = testing::run_op([](Graph& g, std::span<const Value> x) { return ops::matmul(g, x[0], x[1]); }, {a, b});
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace trib
