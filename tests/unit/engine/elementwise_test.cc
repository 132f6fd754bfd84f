#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;
using BinaryBuilder = Value (*)(Graph&, Value, Value, const std::string&);

struct NamedBinary {
  const char* name;
  BinaryBuilder build;
};

const NamedBinary kBinaries[] = {{"add", ops::add}, {"sub", ops::sub}, {"mul", ops::mul}, {"div", ops::div}};

// Shape pairs covering each broadcasting pattern and the fast paths: same shape, row,
// column, outer product, scalar on either side, and a general strided case.
const std::pair<Shape, Shape> kShapePairs[] = {
    {Shape{7, 13}, Shape{7, 13}},     {Shape{1, 1}, Shape{1, 1}},       {Shape{5, 7}, Shape{7}},
    {Shape{6, 1}, Shape{1, 9}},       {Shape{}, Shape{3, 5, 17}},       {Shape{3, 5, 17}, Shape{}},
    {Shape{2, 1, 3}, Shape{4, 1}},    {Shape{6, 1}, Shape{6, 4}},       {Shape{1, 13}, Shape{7, 13}},
    {Shape{3, 1, 5, 1}, Shape{3, 4, 1, 2}}, {Shape{300, 257}, Shape{257}}, {Shape{300, 257}, Shape{300, 257}},
};

// Divisors away from zero, so neither kernel nor finite difference meets a pole.
Tensor operand(const Shape& s, Rng& rng, bool divisor) {
  return divisor ? random_tensor(s, rng, 0.5f, 1.5f) : random_tensor(s, rng);
}

TEST(BinaryOps, MatchReferenceOnEveryBroadcastPattern) {
  Rng rng(11);
  for (const auto& op : kBinaries)
    for (const auto& [sa, sb] : kShapePairs) {
      SCOPED_TRACE(::testing::Message() << op.name << " " << sa.to_string() << " " << sb.to_string());
      std::vector<Tensor> in{operand(sa, rng, false), operand(sb, rng, std::string(op.name) == "div")};
      auto build = [&](Graph& g, std::span<const Value> x) { return op.build(g, x[0], x[1], ""); };
      testing::expect_fast_matches_reference(build, in);
    }
}

TEST(BinaryOps, GradientsMatchNumericOnEveryBroadcastPattern) {
  Rng rng(12);
  for (const auto& op : kBinaries)
    for (const auto& [sa, sb] : kShapePairs) {
      if (sa.numel() > 1000 || sb.numel() > 1000) continue;  // the small shapes cover the math
      SCOPED_TRACE(::testing::Message() << op.name << " " << sa.to_string() << " " << sb.to_string());
      std::vector<Tensor> in{operand(sa, rng, false), operand(sb, rng, std::string(op.name) == "div")};
      auto build = [&](Graph& g, std::span<const Value> x) { return op.build(g, x[0], x[1], ""); };
      testing::expect_gradients_match_numeric(build, in, {0, 1});
    }
}

TEST(BinaryOps, BroadcastValues) {
  Tensor col = Tensor::from_vector<float>(Shape{2, 1}, {1, 2});
  Tensor row = Tensor::from_vector<float>(Shape{1, 3}, {10, 20, 30});
  Tensor y = testing::run_op([](Graph& g, std::span<const Value> x) { return ops::add(g, x[0], x[1]); }, {col, row});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 21, 31, 12, 22, 32}));
}

TEST(BinaryOps, IncompatibleShapesAreAShapeError) {
  Graph g;
  Value a = g.placeholder("a", {DType::f32, Shape{2, 3}});
  Value b = g.placeholder("b", {DType::f32, Shape{4}});
  try {
    ops::add(g, a, b);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'a'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3] and [4] do not broadcast"), std::string::npos) << msg;
  }
}

TEST(BinaryOps, InPlaceReuseKeepsValuesOtherNodesStillRead) {
  // t = a + b is read by both mul and the final add: the mul must not overwrite it, while
  // u (read once) may be overwritten by the final add.
  Rng rng(13);
  Graph g;
  Value a = g.placeholder("a", {DType::f32, Shape{40, 30}});
  Value b = g.placeholder("b", {DType::f32, Shape{30}});
  Value c = g.placeholder("c", {DType::f32, Shape{40, 30}});
  Value t = ops::add(g, a, b);
  Value u = ops::mul(g, t, c);
  Value w = ops::add(g, u, t);
  std::vector<Tensor> in{random_tensor(Shape{40, 30}, rng), random_tensor(Shape{30}, rng), random_tensor(Shape{40, 30}, rng)};
  for (int inter : {1, 2}) {
    EngineContext engine(EngineOptions{2, inter});
    Executor exec(g, {w}, engine);
    VariableStore vars;
    Tensor out = exec.run(std::vector<Feed>{{a, in[0]}, {b, in[1]}, {c, in[2]}}, vars)[0];
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      float tv = in[0].data<float>()[i] + in[1].data<float>()[i % 30];
      EXPECT_FLOAT_EQ(out.data<float>()[i], tv * in[2].data<float>()[i] + tv);
    }
  }
}

TEST(BiasAddOp, MatchesReferenceAndGradient) {
  Rng rng(14);
  for (const Shape& s : {Shape{7, 13}, Shape{1, 1}, Shape{1, 5}, Shape{2, 3, 4, 5}, Shape{3, 5, 17}, Shape{64, 300}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{random_tensor(s, rng), random_tensor(Shape{s.dims()[1]}, rng)};
    auto build = [](Graph& g, std::span<const Value> x) { return ops::bias_add(g, x[0], x[1]); };
    testing::expect_fast_matches_reference(build, in);
    if (s.numel() <= 1000) testing::expect_gradients_match_numeric(build, in, {0, 1});
  }
}

TEST(BiasAddOp, RejectsABiasOfTheWrongSize) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{4, 3, 2, 2}});
  Value b = g.placeholder("b", {DType::f32, Shape{4}});
  EXPECT_THROW(ops::bias_add(g, x, b), ShapeError);
}

}  // namespace
}  // namespace trib
