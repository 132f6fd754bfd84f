#include "trib/engine/autodiff.h"

#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

std::vector<Tensor> run(const Graph& g, std::vector<Value> fetches, std::vector<Feed> feeds, VariableStore& vars) {
  Executor exec(g, std::move(fetches), testing::test_engine());
  return exec.run(feeds, vars);
}

TEST(Autodiff, AValueUsedTwiceGetsTheSumOfItsGradients) {
  // y = x*x + x reads x three times: dy/dx = 2x + 1.
  Rng rng(51);
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{3, 4}});
  Value loss = ops::sum(g, ops::add(g, ops::mul(g, x, x), x));
  std::vector<Gradient> grads = gradients(g, loss, std::vector<Value>{x});
  ASSERT_EQ(grads.size(), 1u);
  ASSERT_FALSE(grads[0].sparse());
  Tensor xv = random_tensor(Shape{3, 4}, rng);
  VariableStore vars;
  Tensor dx = run(g, {grads[0].values}, {{x, xv}}, vars)[0];
  ASSERT_EQ(dx.shape(), xv.shape());
  for (std::int64_t i = 0; i < xv.numel(); ++i) EXPECT_NEAR(dx.data<float>()[i], 2 * xv.data<float>()[i] + 1, 1e-6f);
}

TEST(Autodiff, AVariableTheLossDoesNotReadGetsZeros) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 2}});
  Value used = g.variable("used", {DType::f32, Shape{2, 2}});
  Value unused = g.variable("unused", {DType::f32, Shape{3, 5}});
  Value loss = ops::sum(g, ops::mul(g, x, used));
  std::vector<Gradient> grads = gradients(g, loss, std::vector<Value>{used, unused});
  VariableStore vars;
  vars.set("used", Tensor::full(Shape{2, 2}, 2.0f));
  vars.set("unused", Tensor::full(Shape{3, 5}, 2.0f));
  Tensor xv = Tensor::from_vector<float>(Shape{2, 2}, {1, 2, 3, 4});
  std::vector<Tensor> out = run(g, {grads[0].values, grads[1].values}, {{x, xv}}, vars);
  EXPECT_EQ(out[0].to_vector<float>(), xv.to_vector<float>());
  EXPECT_EQ(out[1].shape(), (Shape{3, 5}));
  EXPECT_EQ(out[1].to_vector<float>(), std::vector<float>(15, 0.0f));
}

TEST(Autodiff, RejectsANonScalarLoss) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{3}});
  Value y = ops::mul(g, x, x, "squares");
  try {
    gradients(g, y, std::vector<Value>{x});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'squares'"), std::string::npos) << e.what();
  }
}

// A 2-layer MLP with a squared activation (to stay within the math ops) and a mean-squared
// loss, checked end to end against finite differences of the loss in every parameter.
TEST(Autodiff, TwoLayerMlpGradientsMatchNumeric) {
  Rng rng(52);
  const std::int64_t batch = 4, in = 5, hidden = 6, out = 3;
  std::vector<Tensor> inputs{
      random_tensor(Shape{batch, in}, rng),       // x
      random_tensor(Shape{in, hidden}, rng),      // w1 [in, out]
      random_tensor(Shape{hidden}, rng),          // b1
      random_tensor(Shape{out, hidden}, rng),     // w2 stored [out, in]: read transposed
      random_tensor(Shape{out}, rng),             // b2
      random_tensor(Shape{batch, out}, rng),      // target
  };
  auto build = [](Graph& g, std::span<const Value> v) {
    Value h = ops::bias_add(g, ops::matmul(g, v[0], v[1]), v[2]);
    Value a = ops::mul(g, h, h);
    Value y = ops::bias_add(g, ops::matmul(g, a, v[3], false, true), v[4]);
    Value d = ops::sub(g, y, v[5]);
    return ops::mean(g, ops::mul(g, d, d));
  };
  testing::expect_gradients_match_numeric(build, inputs, {0, 1, 2, 3, 4, 5});
}

}  // namespace
}  // namespace trib
