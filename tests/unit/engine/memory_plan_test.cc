// The memory plan on a real training step: the CNN of the engine benchmark (two conv +
// ReLU + max-pool blocks, a 3136 x 1024 dense layer, 10 classes) at batch 64, built with
// the ops directly, as trib::train::ModelGraph would build it.
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "trib/engine/autodiff.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

constexpr std::int64_t kBatch = 64;

struct Cnn {
  Graph graph;
  Value features, labels, loss;
  std::vector<Value> params;
  std::vector<Value> fetches;  // loss, then one gradient per parameter
};

Cnn build_cnn() {
  Cnn m;
  Graph& g = m.graph;
  m.features = g.placeholder("features", {DType::f32, Shape{kBatch, 1, 28, 28}});
  m.labels = g.placeholder("labels", {DType::i32, Shape{kBatch}});
  auto param = [&](const std::string& name, Shape s) {
    m.params.push_back(g.variable(name, {DType::f32, std::move(s)}));
    return m.params.back();
  };
  auto conv_block = [&](Value x, const std::string& name, std::int64_t in, std::int64_t out) {
    Value w = param(name + "/w", Shape{out, in, 5, 5});
    Value b = param(name + "/b", Shape{out});
    return ops::max_pool2d(g, ops::relu(g, ops::bias_add(g, ops::conv2d(g, x, w, {1, 1, 2, 2}), b)));
  };
  Value h = conv_block(m.features, "conv1", 1, 32);
  h = ops::flatten(g, conv_block(h, "conv2", 32, 64));
  Value w3 = param("dense1/w", Shape{3136, 1024});
  Value b3 = param("dense1/b", Shape{1024});
  h = ops::relu(g, ops::bias_add(g, ops::matmul(g, h, w3), b3));
  Value w4 = param("dense2/w", Shape{1024, 10});
  Value b4 = param("dense2/b", Shape{10});
  Value logits = ops::bias_add(g, ops::matmul(g, h, w4), b4);
  m.loss = ops::softmax_cross_entropy(g, logits, m.labels);
  m.fetches = {m.loss};
  for (const Gradient& grad : gradients(g, m.loss, m.params)) m.fetches.push_back(grad.values);
  return m;
}

// Bytes of a block the step's pool hands out for n floats: sizes above 4 KiB are rounded up
// to a power of two (core/allocator.h).
std::size_t pooled(std::int64_t floats) {
  std::size_t bytes = static_cast<std::size_t>(floats) * 4, block = 4096;
  if (bytes <= block) return bytes;
  while (block < bytes) block *= 2;
  return block;
}

// Peak bytes of each of `steps` training steps of the CNN on `engine`.
std::vector<std::size_t> step_peaks(const EngineContext& engine, int steps) {
  Cnn m = build_cnn();
  Rng rng(81);
  VariableStore vars;
  for (Value p : m.params)
    vars.set(m.graph.node(p).name, random_tensor(m.graph.spec(p).shape, rng, -0.05f, 0.05f));
  std::vector<Feed> feeds{{m.features, random_tensor(Shape{kBatch, 1, 28, 28}, rng)},
                          {m.labels, testing::random_ints(Shape{kBatch}, rng, 10)}};
  Executor exec(m.graph, m.fetches, engine);
  std::vector<std::size_t> peaks;
  for (int i = 0; i < steps; ++i) {
    exec.run(feeds, vars);
    peaks.push_back(exec.last_peak_bytes());
  }
  return peaks;
}

// What must be alive at once, at the latest point of the backward pass: when the first
// block's pooling gradient is formed, that gradient (N x 32 x 28 x 28) beside the one it is
// formed from (N x 32 x 14 x 14) and the pooling's workspace (a byte per pooled cell), and
// every parameter gradient computed so far, which the step fetches and so keeps to the end
// (all but the first convolution's; dense1's 3136 x 1024 dominates). 26 MiB at batch 64.
// The convolutions' outputs are not in it: the ReLU runs after the pooling (ops/fusion.h),
// so each is dead once pooled, and the ReLU's gradient reads the pooled output instead.
std::size_t must_coexist() {
  Cnn m = build_cnn();
  std::size_t must = pooled(kBatch * 32 * 28 * 28) + pooled(kBatch * 32 * 14 * 14) +
                     pooled(kBatch * 32 * 14 * 14 / 4);  // the workspace's bytes, as floats
  for (std::size_t i = 2; i < m.params.size(); ++i)
    must += pooled(m.graph.spec(m.params[i]).shape.numel());
  return must;
}

// Nodes one after another: the peak is what must coexist plus what a kernel holds while it
// runs (weights reordered for oneDNN, scratchpads, the other block's small activations): at
// most a quarter more. Every intermediate of the step alive at once would be several times
// that. Steps reuse their blocks, so the peak does not grow.
TEST(MemoryPlan, CnnTrainingStepPeakStaysNearWhatMustCoexist) {
  EngineContext sequential({.intra_op_threads = 2, .inter_op_threads = 1});
  const std::size_t must = must_coexist(), bound = must + must / 4;
  for (std::size_t peak : step_peaks(sequential, 3)) {
    EXPECT_GT(peak, must / 2) << "the peak should count the step's tensors";
    EXPECT_LE(peak, bound) << "peak " << peak << " bytes; what must coexist: " << must;
  }
}

// With nodes in parallel, a second branch (a weight gradient beside the next input
// gradient) may hold its output and temporaries at the same moment: half as much again.
TEST(MemoryPlan, CnnPeakWithParallelNodesStaysBounded) {
  const std::size_t must = must_coexist(), bound = must + must / 2;
  for (std::size_t peak : step_peaks(testing::test_engine(), 3))
    EXPECT_LE(peak, bound) << "peak " << peak << " bytes; what must coexist: " << must;
}

}  // namespace
}  // namespace trib
