#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

Value build_scatter(Graph& g, std::span<const Value> v, Shape dense) {
  return ops::scatter_add(g, v[0], v[1], std::move(dense));
}

TEST(ScatterAddOp, SumsDuplicateIdsIntoZeros) {
  Tensor rows = Tensor::from_vector<float>(Shape{4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor ids = Tensor::from_vector<std::int32_t>(Shape{4}, {2, 0, 2, 2});
  Tensor y = testing::run_op([](Graph& g, std::span<const Value> v) { return build_scatter(g, v, Shape{4, 2}); },
                             {rows, ids});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 4, 0, 0, 13, 16, 0, 0}));
}

TEST(ScatterAddOp, MatchesReferenceAndGradient) {
  Rng rng(41);
  struct Case {
    Shape rows;
    std::int64_t v;
    DType ids;
  };
  const Case cases[] = {
      {Shape{6, 4}, 5, DType::i32},   {Shape{1, 1}, 1, DType::i64},   {Shape{7, 13}, 3, DType::i64},
      {Shape{5, 2, 3}, 4, DType::i32}, {Shape{50, 2000}, 20, DType::i64}, {Shape{0, 3}, 2, DType::i32},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rows.to_string() + " into " + std::to_string(c.v) + " rows");
    std::vector<std::int64_t> dense = c.rows.dims();
    dense[0] = c.v;
    std::vector<Tensor> in{random_tensor(c.rows, rng), testing::random_ints(Shape{c.rows.dims()[0]}, rng, c.v, c.ids)};
    auto build = [&](Graph& g, std::span<const Value> v) { return build_scatter(g, v, Shape(dense)); };
    testing::expect_fast_matches_reference(build, in);
    if (c.rows.numel() > 0 && c.rows.numel() <= 1000) testing::expect_gradients_match_numeric(build, in, {0});
  }
}

TEST(ScatterAddOp, AnIdOutOfRangeNamesTheIdAndV) {
  Tensor rows = Tensor::from_vector<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor ids = Tensor::from_vector<std::int64_t>(Shape{3}, {0, 7, 1});
  for (bool reference : {false, true}) {
    try {
      testing::run_op([](Graph& g, std::span<const Value> v) { return build_scatter(g, v, Shape{5, 2}); }, {rows, ids},
                      true, reference);
      FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("scatter_add"), std::string::npos) << msg;
      EXPECT_NE(msg.find("id 7"), std::string::npos) << msg;
      EXPECT_NE(msg.find("V = 5"), std::string::npos) << msg;
    }
  }
  Tensor negative = Tensor::from_vector<std::int32_t>(Shape{3}, {0, -1, 1});
  EXPECT_THROW(testing::run_op([](Graph& g, std::span<const Value> v) { return build_scatter(g, v, Shape{5, 2}); },
                               {rows, negative}),
               InvalidArgument);
}

TEST(ScatterAddOp, RejectsMismatchedShapes) {
  Graph g;
  Value rows = g.placeholder("rows", {DType::f32, Shape{3, 4}});
  Value ids = g.placeholder("ids", {DType::i32, Shape{3}});
  Value short_ids = g.placeholder("short_ids", {DType::i32, Shape{2}});
  Value float_ids = g.placeholder("float_ids", {DType::f32, Shape{3}});
  EXPECT_NO_THROW(ops::scatter_add(g, rows, ids, Shape{10, 4}));
  EXPECT_THROW(ops::scatter_add(g, rows, ids, Shape{10, 5}), ShapeError);
  EXPECT_THROW(ops::scatter_add(g, rows, short_ids, Shape{10, 4}), ShapeError);
  EXPECT_THROW(ops::scatter_add(g, rows, float_ids, Shape{10, 4}), ShapeError);
}

}  // namespace
}  // namespace trib
