#include "trib/engine/executor.h"

#include <gtest/gtest.h>

#include <mutex>

#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

// Expects `f` to throw E with every one of `parts` in its message.
template <typename E, typename F>
void expect_error(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << " missing from: " << msg;
  }
}

TEST(Executor, AMissingFeedNamesThePlaceholder) {
  Graph g;
  Value x = g.placeholder("images", {DType::f32, Shape{2, 3}});
  Value y = ops::scale(g, x, 2.0f);
  Executor exec(g, {y}, testing::test_engine());
  VariableStore vars;
  expect_error<InvalidArgument>([&] { exec.run({}, vars); }, {"'images'", "f32[2, 3]", "feed"});
}

TEST(Executor, AWrongShapedFeedNamesThePlaceholderAndBothSpecs) {
  Graph g;
  Value x = g.placeholder("images", {DType::f32, Shape{2, 3}});
  Value y = ops::scale(g, x, 2.0f);
  Executor exec(g, {y}, testing::test_engine());
  VariableStore vars;
  std::vector<Feed> feeds{{x, Tensor::zeros(DType::f32, Shape{4})}};
  expect_error<InvalidArgument>([&] { exec.run(feeds, vars); }, {"'images'", "f32[2, 3]", "f32[4]"});
}

TEST(Executor, AVariableMissingFromTheStoreIsNotFound) {
  Graph g;
  Value w = g.variable("dense/w", {DType::f32, Shape{2, 2}});
  Value y = ops::scale(g, w, 2.0f);
  Executor exec(g, {y}, testing::test_engine());
  VariableStore vars;
  expect_error<NotFound>([&] { exec.run({}, vars); }, {"'dense/w'"});
}

TEST(Executor, FetchesAnIntermediateBesideTheOutput) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{3}});
  Value doubled = ops::scale(g, x, 2.0f);
  Value y = ops::add(g, doubled, x);
  Executor exec(g, {doubled, y}, testing::test_engine());
  VariableStore vars;
  std::vector<Tensor> out = exec.run(std::vector<Feed>{{x, Tensor::from_vector<float>(Shape{3}, {1, 2, 3})}}, vars);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{3, 6, 9}));
}

TEST(Executor, OnFetchReadyIsCalledOncePerFetch) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{4}});
  Value a = ops::scale(g, x, 2.0f);
  Value b = ops::mul(g, a, x);
  Value c = ops::sum(g, b);
  for (int inter : {1, 2}) {
    EngineContext engine(EngineOptions{1, inter});
    Executor exec(g, {c, a, b}, engine);
    VariableStore vars;
    std::mutex mu;
    std::vector<int> calls(3, 0);
    std::vector<float> first(3, 0.0f);
    RunOptions opts;
    opts.on_fetch_ready = [&](std::size_t i, const Tensor& v) {
      std::lock_guard lock(mu);
      ++calls.at(i);
      first[i] = v.data<float>()[0];
    };
    exec.run(std::vector<Feed>{{x, Tensor::from_vector<float>(Shape{4}, {1, 2, 3, 4})}}, vars, opts);
    EXPECT_EQ(calls, (std::vector<int>{1, 1, 1})) << "inter_op_threads=" << inter;
    EXPECT_EQ(first, (std::vector<float>{60, 2, 2}));
  }
}

// Eight independent matmul chains joined at the end: plenty for two inter-op threads.
struct WideGraph {
  Graph g;
  Value x, loss;
  std::vector<Value> fetches;
  WideGraph() {
    x = g.placeholder("x", {DType::f32, Shape{16, 32}});
    Value total;
    for (int i = 0; i < 8; ++i) {
      Value w = g.variable("w" + std::to_string(i), {DType::f32, Shape{32, 32}});
      Value h = ops::matmul(g, ops::scale(g, x, 1.0f + i), w);
      Value s = ops::sum(g, ops::mul(g, h, h), {1});
      total = total.valid() ? ops::add(g, total, s) : s;
      fetches.push_back(h);
    }
    loss = ops::mean(g, total);
    fetches.push_back(loss);
  }
};

TEST(Executor, InterOpParallelRunsMatchSequentialOnes) {
  WideGraph wide;
  Rng rng(61);
  VariableStore vars;
  for (int i = 0; i < 8; ++i) vars.set("w" + std::to_string(i), random_tensor(Shape{32, 32}, rng));
  std::vector<Feed> feeds{{wide.x, random_tensor(Shape{16, 32}, rng)}};
  EngineContext sequential(EngineOptions{1, 1});
  EngineContext parallel(EngineOptions{1, 2});
  ASSERT_EQ(sequential.inter_op_pool(), nullptr);
  ASSERT_NE(parallel.inter_op_pool(), nullptr);
  std::vector<Tensor> expected = Executor(wide.g, wide.fetches, sequential).run(feeds, vars);
  Executor exec(wide.g, wide.fetches, parallel);
  for (int run = 0; run < 5; ++run) {
    std::vector<Tensor> got = exec.run(feeds, vars);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t f = 0; f < got.size(); ++f)
      EXPECT_EQ(got[f].to_vector<float>(), expected[f].to_vector<float>()) << "fetch " << f << ", run " << run;
  }
}

TEST(Executor, PeakMemoryIsReportedAndReusedBetweenRuns) {
  WideGraph wide;
  Rng rng(62);
  VariableStore vars;
  for (int i = 0; i < 8; ++i) vars.set("w" + std::to_string(i), random_tensor(Shape{32, 32}, rng));
  std::vector<Feed> feeds{{wide.x, random_tensor(Shape{16, 32}, rng)}};
  // Sequential, so both runs free intermediates in the same order.
  EngineContext engine(EngineOptions{1, 1});
  Executor exec(wide.g, {wide.loss}, engine);
  exec.run(feeds, vars);
  const std::size_t first = exec.last_peak_bytes();
  EXPECT_GT(first, 0u);
  // Fetching only the loss frees each branch's [16, 32] intermediates as soon as it is
  // summed, so the peak stays below the eight branches' outputs together.
  EXPECT_LT(first, 8u * 16 * 32 * sizeof(float));
  exec.run(feeds, vars);
  EXPECT_GT(exec.last_peak_bytes(), 0u);
  EXPECT_LE(exec.last_peak_bytes(), first);
}

TEST(Executor, FetchedTensorsOutliveTheExecutor) {
  // Their memory comes from the executor's pool, which they keep alive until dropped.
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{1000}});
  Value y = ops::scale(g, x, 3.0f);
  Tensor out;
  {
    Executor exec(g, {y}, testing::test_engine());
    VariableStore vars;
    out = exec.run(std::vector<Feed>{{x, Tensor::full(Shape{1000}, 1.0f)}}, vars)[0];
  }
  EXPECT_EQ(out.to_vector<float>(), std::vector<float>(1000, 3.0f));
  out = Tensor();  // returns the block to a pool that no executor owns any more
}

TEST(Executor, AKernelErrorNamesTheNode) {
  Graph g;
  Value rows = g.placeholder("rows", {DType::f32, Shape{2, 2}});
  Value ids = g.placeholder("ids", {DType::i32, Shape{2}});
  Value y = ops::scatter_add(g, rows, ids, Shape{3, 2}, "merge_rows");
  Executor exec(g, {y}, testing::test_engine());
  VariableStore vars;
  std::vector<Feed> feeds{{rows, Tensor::zeros(DType::f32, Shape{2, 2})},
                          {ids, Tensor::from_vector<std::int32_t>(Shape{2}, {1, 9})}};
  expect_error<InvalidArgument>([&] { exec.run(feeds, vars); }, {"'merge_rows'", "id 9"});
}

}  // namespace
}  // namespace trib
