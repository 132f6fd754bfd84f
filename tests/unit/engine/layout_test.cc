// Values in oneDNN's blocked layouts (kernels/memory_layout.h): convolutions and pooling
// pass them to each other unconverted, and the executor converts them to plain for every
// other reader and for fetches. Checked on chains of such ops with channel counts that are
// multiples of 16 (where oneDNN picks blocked layouts), against the reference kernels.
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/autodiff.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

// conv(16) + bias + relu -> max pool -> conv(32) + bias + relu -> avg pool: the layers of a
// small CNN, blocked from the first convolution to the last pooling. `smooth` leaves out
// ReLU and max pooling, whose kinks finite differences cannot cross.
Value conv_chain(Graph& g, std::span<const Value> v, bool smooth = false) {
  auto act = [&](Value x) { return smooth ? x : ops::relu(g, x); };
  Value h = act(ops::bias_add(g, ops::conv2d(g, v[0], v[1], {1, 1, 1, 1}), v[2]));
  h = smooth ? ops::avg_pool2d(g, h) : ops::max_pool2d(g, h);
  h = act(ops::bias_add(g, ops::conv2d(g, h, v[3], {1, 1, 1, 1}), v[4]));
  return ops::avg_pool2d(g, h);
}

std::vector<Tensor> chain_inputs(Rng& rng, std::int64_t batch) {
  return {random_tensor(Shape{batch, 3, 8, 8}, rng), random_tensor(Shape{16, 3, 3, 3}, rng),
          random_tensor(Shape{16}, rng), random_tensor(Shape{32, 16, 3, 3}, rng, -0.3f, 0.3f),
          random_tensor(Shape{32}, rng)};
}

TEST(Layouts, AConvPoolChainMatchesReference) {
  Rng rng(71);
  for (std::int64_t batch : {1, 3}) {
    SCOPED_TRACE(batch);
    testing::expect_fast_matches_reference([](Graph& g, std::span<const Value> v) { return conv_chain(g, v); },
                                           chain_inputs(rng, batch));
    testing::expect_fast_matches_reference([](Graph& g, std::span<const Value> v) { return conv_chain(g, v); },
                                           chain_inputs(rng, batch), 1e-4f, false);
  }
}

TEST(Layouts, AConvPoolChainGradientsMatchNumeric) {
  Rng rng(72);
  testing::GradCheckOptions opts;
  opts.max_elements = 24;
  auto smooth = [](Graph& g, std::span<const Value> v) { return conv_chain(g, v, true); };
  testing::expect_gradients_match_numeric(smooth, chain_inputs(rng, 2), {0, 1, 2, 3, 4}, opts);
}

// Every gradient of a small CNN's loss, with fast kernels (blocked in between) and with the
// reference ones (plain throughout), on one executor each.
TEST(Layouts, CnnTrainingGradientsMatchReference) {
  Rng rng(73);
  Graph g;
  std::vector<Tensor> in = chain_inputs(rng, 4);
  std::vector<Value> v;
  for (std::size_t i = 0; i < in.size(); ++i)
    v.push_back(g.placeholder("in" + std::to_string(i), {in[i].dtype(), in[i].shape()}));
  Value features = ops::flatten(g, conv_chain(g, v));
  Value w = g.placeholder("dense_w", {DType::f32, Shape{32 * 2 * 2, 10}});
  Value b = g.placeholder("dense_b", {DType::f32, Shape{10}});
  Value labels = g.placeholder("labels", {DType::i32, Shape{4}});
  Value logits = ops::bias_add(g, ops::matmul(g, features, w), b);
  Value loss = ops::softmax_cross_entropy(g, logits, labels);
  std::vector<Value> wrt = {v[1], v[2], v[3], v[4], w, b};
  std::vector<Value> fetches{loss, features};
  for (const Gradient& grad : gradients(g, loss, wrt)) fetches.push_back(grad.values);

  std::vector<Feed> feeds;
  for (std::size_t i = 0; i < in.size(); ++i) feeds.push_back({v[i], in[i]});
  Tensor wv = random_tensor(Shape{128, 10}, rng), bv = random_tensor(Shape{10}, rng);
  Tensor lv = testing::random_ints(Shape{4}, rng, 10);
  feeds.push_back({w, wv});
  feeds.push_back({b, bv});
  feeds.push_back({labels, lv});

  VariableStore vars;
  std::vector<std::vector<Tensor>> results;
  for (bool reference : {false, true}) {
    RunOptions opts;
    opts.reference_kernels = reference;
    Executor exec(g, fetches, testing::test_engine());
    results.push_back(exec.run(feeds, vars, opts));
  }
  for (std::size_t f = 0; f < fetches.size(); ++f) {
    const Tensor& fast = results[0][f];
    const Tensor& ref = results[1][f];
    ASSERT_EQ(fast.spec_string(), ref.spec_string()) << "fetch " << f;
    for (std::int64_t i = 0; i < fast.numel(); ++i)
      ASSERT_NEAR(fast.data<float>()[i], ref.data<float>()[i], 2e-4f * (1 + std::fabs(ref.data<float>()[i])))
          << "fetch " << f << " element " << i;
  }
}

// A blocked value read both by a kernel that takes it as is (pooling) and by one that needs
// it plain (scale), and fetched: all three see the same numbers.
TEST(Layouts, ABlockedValueReachesPlainReadersAndFetchesConverted) {
  Rng rng(74);
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{2, 4, 6, 6}});
  Value w = g.placeholder("w", {DType::f32, Shape{16, 4, 3, 3}});
  Value conv = ops::conv2d(g, x, w, {1, 1, 1, 1});
  Value pooled = ops::max_pool2d(g, conv);
  Value doubled = ops::scale(g, conv, 2.0f);
  std::vector<Feed> feeds{{x, random_tensor(Shape{2, 4, 6, 6}, rng)},
                          {w, random_tensor(Shape{16, 4, 3, 3}, rng)}};
  VariableStore vars;
  Executor exec(g, {conv, pooled, doubled}, testing::test_engine());
  std::vector<Tensor> fast = exec.run(feeds, vars);
  RunOptions ref_opts;
  ref_opts.reference_kernels = true;
  std::vector<Tensor> ref = exec.run(feeds, vars, ref_opts);
  for (std::size_t f = 0; f < 3; ++f)
    for (std::int64_t i = 0; i < fast[f].numel(); ++i)
      ASSERT_NEAR(fast[f].data<float>()[i], ref[f].data<float>()[i], 1e-4f) << f << ":" << i;
  for (std::int64_t i = 0; i < fast[0].numel(); ++i)
    ASSERT_EQ(fast[2].data<float>()[i], 2.0f * fast[0].data<float>()[i]);
}

}  // namespace
}  // namespace trib
