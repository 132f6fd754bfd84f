#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

struct ReduceCase {
  Shape shape;
  std::vector<int> axes;
};

// Each collapsed pattern the kernel distinguishes: everything, trailing, leading, the bias
// gradient's outer-and-inner, a kept middle between reduced ones and the reverse, plus
// size-1 axes, negative axes and sizes big enough for the threaded paths.
const ReduceCase kCases[] = {
    {Shape{7, 13}, {}},          {Shape{7, 13}, {0}},         {Shape{7, 13}, {1}},
    {Shape{1, 1}, {}},           {Shape{1, 1}, {0}},          {Shape{3, 5, 17}, {0, 2}},
    {Shape{3, 5, 17}, {1}},      {Shape{3, 5, 17}, {-1}},     {Shape{3, 5, 17}, {0, 1}},
    {Shape{4, 6, 5, 7}, {0, 2, 3}}, {Shape{2, 1, 3, 1}, {1, 2}}, {Shape{}, {}},
    {Shape{300, 257}, {0}},      {Shape{300, 257}, {1}},      {Shape{600, 257}, {}},
    {Shape{9, 8, 7, 6}, {0, 2}}, {Shape{1, 40}, {0}},
};

TEST(ReduceOps, SumAndMeanMatchReference) {
  Rng rng(21);
  for (const auto& c : kCases)
    for (bool keepdims : {false, true})
      for (bool mean : {false, true}) {
        SCOPED_TRACE(::testing::Message() << c.shape.to_string() << " axes " << ::testing::PrintToString(c.axes)
                                          << " keepdims=" << keepdims << " mean=" << mean);
        std::vector<Tensor> in{random_tensor(c.shape, rng)};
        auto build = [&](Graph& g, std::span<const Value> x) {
          return mean ? ops::mean(g, x[0], c.axes, keepdims) : ops::sum(g, x[0], c.axes, keepdims);
        };
        testing::expect_fast_matches_reference(build, in);
        if (c.shape.numel() <= 2000) testing::expect_gradients_match_numeric(build, in, {0});
      }
}

TEST(ReduceOps, OutputShapes) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 3, 4}});
  EXPECT_EQ(g.spec(ops::sum(g, x)).shape, Shape{});
  EXPECT_EQ(g.spec(ops::sum(g, x, {}, true)).shape, (Shape{1, 1, 1}));
  EXPECT_EQ(g.spec(ops::mean(g, x, {1})).shape, (Shape{2, 4}));
  EXPECT_EQ(g.spec(ops::mean(g, x, {-1, 0}, true)).shape, (Shape{1, 3, 1}));
}

TEST(ReduceOps, KnownValues) {
  Tensor x = Tensor::from_vector<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  auto run = [&](auto build) { return testing::run_op(build, {x}).template to_vector<float>(); };
  EXPECT_EQ(run([](Graph& g, std::span<const Value> v) { return ops::sum(g, v[0], {0}); }), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(run([](Graph& g, std::span<const Value> v) { return ops::mean(g, v[0], {1}); }), (std::vector<float>{2, 5}));
  EXPECT_EQ(run([](Graph& g, std::span<const Value> v) { return ops::sum(g, v[0]); }), (std::vector<float>{21}));
}

TEST(ReduceOps, EmptyInputSumsToZero) {
  Tensor x = Tensor::zeros(DType::f32, Shape{0, 3});
  Tensor y = testing::run_op([](Graph& g, std::span<const Value> v) { return ops::sum(g, v[0], {0}); }, {x});
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(3, 0.0f));
}

TEST(ReduceOps, BadAxesAreShapeErrors) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 3}});
  EXPECT_THROW(ops::sum(g, x, {2}), ShapeError);
  EXPECT_THROW(ops::sum(g, x, {0, -2}), ShapeError);
}

TEST(SumToOp, MatchesReferenceAndGradient) {
  Rng rng(22);
  const std::pair<Shape, Shape> cases[] = {
      {Shape{5, 7}, Shape{7}},          {Shape{5, 7}, Shape{5, 1}},   {Shape{2, 3, 4}, Shape{3, 1}},
      {Shape{3, 5, 17}, Shape{}},       {Shape{7, 13}, Shape{7, 13}}, {Shape{1, 1}, Shape{1}},
      {Shape{4, 6, 5}, Shape{4, 1, 5}}, {Shape{300, 257}, Shape{1, 257}},
  };
  for (const auto& [from, to] : cases) {
    SCOPED_TRACE(from.to_string() + " -> " + to.to_string());
    std::vector<Tensor> in{random_tensor(from, rng)};
    auto build = [&](Graph& g, std::span<const Value> x) { return ops::sum_to(g, x[0], to); };
    testing::expect_fast_matches_reference(build, in);
    if (from.numel() <= 2000) testing::expect_gradients_match_numeric(build, in, {0});
  }
}

TEST(SumToOp, RejectsATargetThatDoesNotBroadcastBack) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{5, 7}});
  EXPECT_THROW(ops::sum_to(g, x, Shape{5}), ShapeError);
  EXPECT_THROW(ops::sum_to(g, x, Shape{2, 5, 7}), ShapeError);
}

}  // namespace
}  // namespace trib
