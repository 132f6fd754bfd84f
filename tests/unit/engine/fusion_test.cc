// Build-time fusion (ops/fusion.h): conv2d or matmul, then bias_add, then relu, become one
// node computed by one oneDNN primitive. Each fused form is checked like any op (fast
// against reference, gradients against finite differences), and the builders are checked to
// fuse exactly when they should.
#include <gtest/gtest.h>

#include "engine/ops/fusion.h"
#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/autodiff.h"
#include "trib/engine/executor.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

struct ConvCase {
  Shape x, w;
  ops::Conv2dOptions opts;
};

// Odd sizes, batch 1, stride 2, and channel counts of 16 and 32 (blocked layouts).
std::vector<ConvCase> conv_cases() {
  return {
      {Shape{2, 3, 7, 9}, Shape{4, 3, 3, 3}, {1, 1, 1, 1}},
      {Shape{1, 1, 8, 8}, Shape{16, 1, 5, 5}, {1, 1, 2, 2}},
      {Shape{2, 16, 6, 5}, Shape{32, 16, 3, 3}, {2, 2, 1, 1}},
  };
}

// Inputs for which no output lies near ReLU's kink, so finite differences never straddle
// it: x positive, and each output channel's weights and bias of one sign, alternating
// between channels (so both branches of ReLU are exercised). Every output is then at least
// 0.01 per tap inside the image away from 0, more than any finite-difference step moves it.
// `channel_axis` of w (and its size) selects the output channels.
std::vector<Tensor> signed_by_channel(Rng& rng, const Shape& x, const Shape& w, int channel_axis) {
  Tensor xv = random_tensor(x, rng, 0.1f, 1.0f), wv = random_tensor(w, rng, 0.1f, 1.0f);
  const std::int64_t channels = w[channel_axis];
  Tensor bv = random_tensor(Shape{channels}, rng, 0.0f, 0.5f);
  const std::int64_t inner = w.strides()[channel_axis];
  for (std::int64_t i = 0; i < wv.numel(); ++i)
    if ((i / inner) % channels % 2 == 1) wv.data<float>()[i] = -wv.data<float>()[i];
  for (std::int64_t o = 1; o < channels; o += 2) bv.data<float>()[o] = -bv.data<float>()[o];
  return {xv, wv, bv};
}

TEST(Fusion, ConvBiasReluMatchesReferenceAndGradient) {
  Rng rng(61);
  for (const ConvCase& c : conv_cases())
    for (bool bias : {false, true})
      for (bool relu : {false, true}) {
        SCOPED_TRACE(::testing::Message() << c.x.to_string() << " " << c.w.to_string()
                                          << " bias=" << bias << " relu=" << relu);
        std::vector<Tensor> in = signed_by_channel(rng, c.x, c.w, 0);
        auto build = [&](Graph& g, std::span<const Value> v) {
          return ops::conv2d_fused(g, v[0], v[1], bias ? v[2] : Value{}, relu, c.opts);
        };
        testing::expect_fast_matches_reference(build, in);
        testing::expect_fast_matches_reference(build, in, 1e-4f, /*training=*/false);
        std::vector<int> wrt{0, 1};
        if (bias) wrt.push_back(2);
        testing::expect_gradients_match_numeric(build, in, wrt);
      }
}

TEST(Fusion, ConvWeightsAndBiasGradientMatchesReference) {
  Rng rng(62);
  for (const ConvCase& c : conv_cases()) {
    const Shape y = testing::run_op(
        [&](Graph& g, std::span<const Value> v) { return ops::conv2d(g, v[0], v[1], c.opts); },
        {random_tensor(c.x, rng), random_tensor(c.w, rng)}).shape();
    std::vector<Tensor> in{random_tensor(c.x, rng), random_tensor(y, rng)};
    for (int out : {0, 1})
      testing::expect_fast_matches_reference(
          [&](Graph& g, std::span<const Value> v) {
            auto r = ops::backward::conv2d_weights_and_bias(g, v[0], v[1], c.w, c.opts);
            return out == 0 ? r.dw : r.db;
          },
          in);
  }
}

TEST(Fusion, MatmulBiasReluMatchesReferenceAndGradient) {
  Rng rng(63);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool bias : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb << " bias=" << bias);
        const std::int64_t m = 7, k = 13, n = 5;
        std::vector<Tensor> in = signed_by_channel(rng, ta ? Shape{k, m} : Shape{m, k},
                                                   tb ? Shape{n, k} : Shape{k, n}, tb ? 0 : 1);
        auto build = [&](Graph& g, std::span<const Value> v) {
          return ops::matmul_fused(g, v[0], v[1], ta, tb, bias ? v[2] : Value{}, true);
        };
        testing::expect_fast_matches_reference(build, in);
        std::vector<int> wrt{0, 1};
        if (bias) wrt.push_back(2);
        testing::expect_gradients_match_numeric(build, in, wrt);
      }
}

TEST(Fusion, BiasReluBackwardMatchesReference) {
  Rng rng(65);
  for (Shape s : {Shape{1, 1}, Shape{7, 13}, Shape{64, 256}, Shape{3, 40}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{random_tensor(s, rng), random_tensor(s, rng)};
    for (int out : {0, 1})
      testing::expect_fast_matches_reference(
          [&](Graph& g, std::span<const Value> v) {
            auto r = ops::backward::bias_relu(g, v[0], v[1]);
            return out == 0 ? r.d : r.db;
          },
          in);
  }
}

TEST(Fusion, BuildersFuseConvAndDenseLayers) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 1, 8, 8}});
  Value w = g.variable("w", {DType::f32, Shape{16, 1, 3, 3}});
  Value b = g.variable("b", {DType::f32, Shape{16}});
  Value conv = ops::relu(g, ops::bias_add(g, ops::conv2d(g, x, w, {1, 1, 1, 1}), b), "act");
  EXPECT_EQ(g.node(conv).op->name(), "conv2d_bias_relu");
  EXPECT_EQ(g.node(conv).name, "act");
  EXPECT_EQ(g.node(conv).inputs, (std::vector<Value>{x, w, b}));

  Value flat = ops::flatten(g, conv);
  Value w2 = g.variable("w2", {DType::f32, Shape{16 * 64, 10}});
  Value b2 = g.variable("b2", {DType::f32, Shape{10}});
  Value dense = ops::bias_add(g, ops::matmul(g, flat, w2), b2);
  EXPECT_EQ(g.node(dense).op->name(), "matmul_bias");
  EXPECT_EQ(g.node(ops::relu(g, dense)).op->name(), "matmul_bias_relu");
  // ReLU on its own, or a second ReLU, stays a separate node.
  EXPECT_EQ(g.node(ops::relu(g, flat)).op->name(), "relu");
  EXPECT_EQ(g.node(ops::relu(g, conv)).op->name(), "relu");
}

TEST(Fusion, MaxPoolingAfterAReluRunsBeforeIt) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 1, 8, 8}});
  Value w = g.variable("w", {DType::f32, Shape{16, 1, 3, 3}});
  Value b = g.variable("b", {DType::f32, Shape{16}});
  Value act = ops::relu(g, ops::bias_add(g, ops::conv2d(g, x, w, {1, 1, 1, 1}), b));
  Value pooled = ops::max_pool2d(g, act, {}, "pool");
  const Node& relu = g.node(pooled);
  EXPECT_EQ(relu.op->name(), "relu");
  EXPECT_EQ(relu.name, "pool");
  const Node& pool = g.node(relu.inputs[0]);
  EXPECT_EQ(pool.op->name(), "max_pool2d");
  EXPECT_EQ(g.node(pool.inputs[0]).op->name(), "conv2d_bias");
  // Average pooling does not commute with ReLU and stays after it.
  EXPECT_EQ(g.node(g.node(ops::avg_pool2d(g, act)).inputs[0]).op->name(), "conv2d_bias_relu");
}

// max(relu(x)) and relu(max(x)) agree value for value and in their gradients, ties and
// all-negative windows included.
TEST(Fusion, ReluAfterMaxPoolingGivesTheSameValuesAndGradients) {
  Rng rng(66);
  Tensor x = random_tensor(Shape{2, 3, 6, 6}, rng);
  for (std::int64_t i = 0; i < x.numel(); i += 5) x.data<float>()[i] = 0.0f;  // ties at 0
  Tensor w = random_tensor(Shape{16, 3, 3, 3}, rng);
  Tensor b = random_tensor(Shape{16}, rng, -0.5f, 0.0f);  // many negative windows
  for (bool reference : {false, true}) {
    std::vector<std::vector<Tensor>> results;
    for (bool commuted : {false, true}) {
      Graph g;
      Value xv = g.placeholder("x", {DType::f32, x.shape()});
      Value wv = g.placeholder("w", {DType::f32, w.shape()});
      Value bv = g.placeholder("b", {DType::f32, b.shape()});
      Value conv = ops::conv2d_fused(g, xv, wv, bv, false, {1, 1, 1, 1});
      // The builder commutes relu and pooling; the other order is built from the parts.
      Value y = commuted ? ops::max_pool2d(g, ops::relu(g, conv))
                         : ops::max_pool2d(g, ops::relu(g, ops::scale(g, conv, 1.0f)));
      Value loss = ops::sum(g, ops::mul(g, y, y));
      std::vector<Value> fetches{y};
      for (const Gradient& grad : gradients(g, loss, std::vector<Value>{xv, wv, bv}))
        fetches.push_back(grad.values);
      Executor exec(g, fetches, testing::test_engine());
      VariableStore vars;
      RunOptions opts;
      opts.reference_kernels = reference;
      std::vector<Feed> feeds{{xv, x}, {wv, w}, {bv, b}};
      results.push_back(exec.run(feeds, vars, opts));
    }
    for (std::size_t f = 0; f < results[0].size(); ++f)
      for (std::int64_t i = 0; i < results[0][f].numel(); ++i)
        ASSERT_EQ(results[0][f].data<float>()[i], results[1][f].data<float>()[i])
            << (reference ? "reference" : "fast") << " fetch " << f << " element " << i;
  }
}

TEST(Fusion, AMisfitBiasIsStillAnErrorNamingTheNodes) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 3}});
  Value w = g.placeholder("w", {DType::f32, Shape{3, 4}});
  Value b = g.placeholder("bias", {DType::f32, Shape{5}});
  try {
    ops::bias_add(g, ops::matmul(g, x, w), b, "add_bias");
    ADD_FAILURE() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    for (const char* part : {"'add_bias'", "'bias'", "[5]"})
      EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  }
}

// The unfused output stays usable: a graph that fetches the convolution before the bias
// gets it (computed by the unfused node) beside the fused result.
TEST(Fusion, TheUnfusedValueStaysAvailable) {
  Rng rng(64);
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 2, 5, 5}});
  Value w = g.placeholder("w", {DType::f32, Shape{16, 2, 3, 3}});
  Value b = g.placeholder("b", {DType::f32, Shape{16}});
  Value conv = ops::conv2d(g, x, w, {1, 1, 1, 1});
  Value fused = ops::relu(g, ops::bias_add(g, conv, b));
  Tensor xv = random_tensor(Shape{2, 2, 5, 5}, rng), wv = random_tensor(Shape{16, 2, 3, 3}, rng),
         bv = random_tensor(Shape{16}, rng);
  std::vector<Feed> feeds{{x, xv}, {w, wv}, {b, bv}};
  VariableStore vars;
  Executor exec(g, {conv, fused}, testing::test_engine());
  std::vector<Tensor> out = exec.run(feeds, vars);
  for (std::int64_t i = 0; i < out[0].numel(); ++i) {
    const float expect = std::max(0.0f, out[0].data<float>()[i] + bv.data<float>()[i / 25 % 16]);
    ASSERT_NEAR(out[1].data<float>()[i], expect, 1e-5f) << i;
  }
}

}  // namespace
}  // namespace trib
