#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

// 0, 1, 2, ... in the given dtype, so moved elements are easy to recognise.
Tensor iota(DType dtype, const Shape& s) {
  Tensor t = Tensor::empty(dtype, s);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DType::f32: t.data<float>()[i] = static_cast<float>(i); break;
      case DType::i32: t.data<std::int32_t>()[i] = static_cast<std::int32_t>(i); break;
      case DType::i64: t.data<std::int64_t>()[i] = i * 1000000007LL; break;
    }
  }
  return t;
}

TEST(ReshapeOp, IsAViewAndHasAGradient) {
  Rng rng(31);
  Tensor x = random_tensor(Shape{3, 5, 17}, rng);
  auto build = [](Graph& g, std::span<const Value> v) { return ops::reshape(g, v[0], Shape{15, 17}); };
  Tensor y = testing::run_op(build, {x});
  EXPECT_TRUE(y.shares_storage(x)) << "reshape must not copy";
  EXPECT_EQ(y.shape(), (Shape{15, 17}));
  testing::expect_fast_matches_reference(build, {x});
  testing::expect_gradients_match_numeric(build, {x}, {0});
}

TEST(ReshapeOp, WorksOnIntegersAndRejectsAnotherElementCount) {
  Tensor ids = iota(DType::i64, Shape{2, 6});
  auto build = [](Graph& g, std::span<const Value> v) { return ops::reshape(g, v[0], Shape{3, 4}); };
  testing::expect_fast_matches_reference(build, {ids});
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 6}});
  EXPECT_THROW(ops::reshape(g, x, Shape{5, 2}), ShapeError);
}

TEST(FlattenOp, KeepsTheBatchAxis) {
  Rng rng(32);
  for (const Shape& s : {Shape{2, 3, 4}, Shape{1, 1}, Shape{5}, Shape{4, 3, 2, 2}}) {
    Tensor x = random_tensor(s, rng);
    auto build = [](Graph& g, std::span<const Value> v) { return ops::flatten(g, v[0]); };
    Tensor y = testing::run_op(build, {x});
    EXPECT_EQ(y.shape(), (Shape{s.dims()[0], s.numel() / s.dims()[0]}));
    EXPECT_TRUE(y.shares_storage(x));
    testing::expect_gradients_match_numeric(build, {x}, {0});
  }
}

TEST(TransposeOp, MatchesReferenceForEveryPermutationAndDtype) {
  Rng rng(33);
  const std::pair<Shape, std::vector<int>> cases[] = {
      {Shape{7, 13}, {1, 0}},          {Shape{1, 1}, {1, 0}},           {Shape{3, 5, 17}, {0, 1, 2}},
      {Shape{3, 5, 17}, {0, 2, 1}},    {Shape{3, 5, 17}, {1, 0, 2}},    {Shape{3, 5, 17}, {1, 2, 0}},
      {Shape{3, 5, 17}, {2, 0, 1}},    {Shape{3, 5, 17}, {2, 1, 0}},    {Shape{2, 3, 4, 5}, {0, 2, 3, 1}},
      {Shape{2, 3, 4, 5}, {0, 3, 1, 2}}, {Shape{100, 70}, {1, 0}},     {Shape{1, 7, 1, 3}, {3, 2, 1, 0}},
      {Shape{4, 65, 33}, {0, 2, 1}},   {Shape{6}, {0}},
  };
  for (const auto& [shape, perm] : cases)
    for (DType dt : {DType::f32, DType::i32, DType::i64}) {
      SCOPED_TRACE(shape.to_string() + " perm " + ::testing::PrintToString(perm) + " " + std::string(dtype_name(dt)));
      std::vector<Tensor> in{dt == DType::f32 ? random_tensor(shape, rng) : iota(dt, shape)};
      auto build = [&](Graph& g, std::span<const Value> v) { return ops::transpose(g, v[0], perm); };
      testing::expect_fast_matches_reference(build, in);
      if (dt == DType::f32 && shape.numel() <= 1000) testing::expect_gradients_match_numeric(build, in, {0});
    }
}

TEST(TransposeOp, RejectsABadPermutation) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 3, 4}});
  EXPECT_THROW(ops::transpose(g, x, {0, 1}), ShapeError);
  EXPECT_THROW(ops::transpose(g, x, {0, 1, 1}), ShapeError);
  EXPECT_THROW(ops::transpose(g, x, {0, 1, 3}), ShapeError);
}

TEST(ConcatOp, MatchesReferenceOnEveryAxisAndDtype) {
  Rng rng(34);
  for (DType dt : {DType::f32, DType::i32, DType::i64})
    for (int axis : {0, 1, 2, -1}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " axis " << axis);
      std::vector<Tensor> in;
      for (std::int64_t len : {1, 4, 7}) {
        std::vector<std::int64_t> dims{3, 5, 17};
        dims[axis < 0 ? 2 : axis] = len;
        Shape s(dims);
        in.push_back(dt == DType::f32 ? random_tensor(s, rng) : iota(dt, s));
      }
      auto build = [&](Graph& g, std::span<const Value> v) {
        return ops::concat(g, std::vector<Value>(v.begin(), v.end()), axis);
      };
      testing::expect_fast_matches_reference(build, in);
      if (dt == DType::f32) testing::expect_gradients_match_numeric(build, in, {0, 1, 2});
    }
}

TEST(ConcatOp, JoinsSparseIndicesAndKnownValues) {
  Tensor a = Tensor::from_vector<std::int64_t>(Shape{2}, {4, 9});
  Tensor b = Tensor::from_vector<std::int64_t>(Shape{3}, {1, 1, 7});
  Tensor y = testing::run_op([](Graph& g, std::span<const Value> v) { return ops::concat(g, {v[0], v[1]}, 0); }, {a, b});
  EXPECT_EQ(y.to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 9, 1, 1, 7}));
}

TEST(ConcatOp, RejectsMismatchedInputs) {
  Graph g;
  Value a = g.placeholder("a", {DType::f32, Shape{2, 3}});
  Value b = g.placeholder("b", {DType::f32, Shape{2, 4}});
  Value c = g.placeholder("c", {DType::i32, Shape{2, 3}});
  EXPECT_NO_THROW(ops::concat(g, {a, b}, 1));
  EXPECT_THROW(ops::concat(g, {a, b}, 0), ShapeError);
  EXPECT_THROW(ops::concat(g, {a, c}, 0), ShapeError);
  EXPECT_THROW(ops::concat(g, {a, b}, 2), ShapeError);
}

TEST(SliceOp, MatchesReferenceAndGradient) {
  Rng rng(35);
  struct Case {
    Shape shape;
    std::vector<std::int64_t> begin, size;
  };
  const Case cases[] = {
      {Shape{7, 13}, {2, 3}, {4, 5}},         {Shape{7, 13}, {0, 0}, {7, 13}},   {Shape{7, 13}, {3, 0}, {2, 13}},
      {Shape{1, 1}, {0, 0}, {1, 1}},          {Shape{3, 5, 17}, {1, 2, 4}, {2, 3, 9}},
      {Shape{3, 5, 17}, {0, 1, 0}, {3, 3, 17}}, {Shape{3, 5, 17}, {2, 0, 16}, {1, 5, 1}},
      {Shape{200, 300}, {10, 20}, {150, 250}}, {Shape{5}, {1}, {3}},             {Shape{4, 4}, {1, 1}, {0, 2}},
  };
  for (const Case& c : cases)
    for (DType dt : {DType::f32, DType::i64}) {
      SCOPED_TRACE(c.shape.to_string() + " begin " + ::testing::PrintToString(c.begin) + " size " +
                   ::testing::PrintToString(c.size));
      std::vector<Tensor> in{dt == DType::f32 ? random_tensor(c.shape, rng) : iota(dt, c.shape)};
      auto build = [&](Graph& g, std::span<const Value> v) { return ops::slice(g, v[0], c.begin, c.size); };
      testing::expect_fast_matches_reference(build, in);
      if (dt == DType::f32 && c.shape.numel() <= 1000) testing::expect_gradients_match_numeric(build, in, {0});
    }
}

TEST(SliceOp, RejectsABoxOutsideTheInput) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{4, 5}});
  EXPECT_THROW(ops::slice(g, x, {0, 3}, {4, 3}), ShapeError);
  EXPECT_THROW(ops::slice(g, x, {-1, 0}, {1, 1}), ShapeError);
  EXPECT_THROW(ops::slice(g, x, {0}, {1}), ShapeError);
}

TEST(BroadcastToOp, MatchesReferenceAndGradient) {
  Rng rng(36);
  const std::pair<Shape, Shape> cases[] = {
      {Shape{7}, Shape{5, 7}},         {Shape{5, 1}, Shape{5, 7}},      {Shape{}, Shape{3, 5, 17}},
      {Shape{1, 1}, Shape{1, 1}},      {Shape{2, 1, 3}, Shape{4, 2, 5, 3}}, {Shape{3, 1}, Shape{2, 3, 4}},
      {Shape{257}, Shape{300, 257}},   {Shape{300, 1}, Shape{300, 257}},
  };
  for (const auto& [from, to] : cases) {
    SCOPED_TRACE(from.to_string() + " -> " + to.to_string());
    std::vector<Tensor> in{random_tensor(from, rng)};
    auto build = [&](Graph& g, std::span<const Value> v) { return ops::broadcast_to(g, v[0], to); };
    testing::expect_fast_matches_reference(build, in);
    if (to.numel() <= 2000) testing::expect_gradients_match_numeric(build, in, {0});
  }
}

TEST(BroadcastToOp, RejectsAnIncompatibleTarget) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{3, 2}});
  EXPECT_THROW(ops::broadcast_to(g, x, Shape{3, 4}), ShapeError);
  EXPECT_THROW(ops::broadcast_to(g, x, Shape{2}), ShapeError);
}

}  // namespace
}  // namespace trib
