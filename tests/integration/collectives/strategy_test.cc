// The allreduce strategy: N workers at batch b (threads, in-process transport) take the
// same steps as one process at batch N*b, with the gradient hook overlapping the exchange.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "trib/collectives/strategy_allreduce.h"
#include "trib/core/random.h"
#include "trib/engine/context.h"
#include "trib/nn/layers.h"
#include "trib/nn/sequential.h"
#include "trib/optim/adam.h"
#include "trib/optim/schedule.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"
#include "trib/optim/sgd.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives {
namespace {

using testing::ThreadGroup;

constexpr std::int64_t kInput = 12, kClasses = 5;

train::ModelSpec model_spec() {
  auto m = std::make_shared<nn::Sequential>();
  m->add<nn::Dense>(nn::DenseOptions{.units = 32, .activation = nn::Activation::relu});
  m->add<nn::Dense>(nn::DenseOptions{.units = 16, .activation = nn::Activation::tanh});
  m->add<nn::Dense>(nn::DenseOptions{.units = kClasses});
  return {m, Shape{kInput}, kClasses, /*seed=*/3};
}

struct Data {
  Tensor x, y;
  // Rows [begin, begin + n) as a batch.
  std::pair<Tensor, Tensor> rows(std::int64_t begin, std::int64_t n) const {
    Tensor bx = Tensor::empty(DType::f32, Shape{n, kInput});
    Tensor by = Tensor::empty(DType::i32, Shape{n});
    std::copy_n(x.data<float>() + begin * kInput, n * kInput, bx.data<float>());
    std::copy_n(y.data<std::int32_t>() + begin, n, by.data<std::int32_t>());
    return {bx, by};
  }
};

Data make_data(std::int64_t n) {
  Rng rng(11);
  Data d{Tensor::empty(DType::f32, Shape{n, kInput}), Tensor::empty(DType::i32, Shape{n})};
  for (float& v : d.x.span<float>()) v = rng.normal();
  for (std::int32_t& v : d.y.span<std::int32_t>()) v = static_cast<std::int32_t>(rng.below(kClasses));
  return d;
}

std::vector<std::string> trainable_names(const train::ModelGraph& g) {
  std::vector<std::string> names;
  for (const nn::Parameter& p : g.trainable_parameters()) names.push_back(p.name);
  return names;
}

// One process at batch n*b for `steps` steps.
VariableStore train_single(const Data& data, int n, std::int64_t b, int steps, std::shared_ptr<const Optimizer> opt) {
  EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 1});
  train::ModelSpec spec = model_spec();
  train::ModelGraph graph(spec, n * b, true, engine);
  VariableStore vars;
  train::initialize_parameters(graph.parameters(), spec.seed, vars);
  update::LocalUpdate update({trainable_names(graph), opt, std::make_shared<ConstantSchedule>(0.05f)});
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = data.rows(s * n * b, n * b);
    train::StepResult r = graph.run(x, y, vars, static_cast<std::uint64_t>(s));
    EXPECT_TRUE(update.apply(s, r.grads, vars));
  }
  return vars;
}

// n workers at batch b; returns every worker's variables.
std::vector<VariableStore> train_allreduce(const Data& data, int n, std::int64_t b, int steps,
                                           std::shared_ptr<const Optimizer> opt, std::size_t bucket_bytes,
                                           Compression compression = Compression::none) {
  ThreadGroup g(n);
  std::vector<VariableStore> out(static_cast<std::size_t>(n));
  g.run_ok([&](int r, Group&) {
    EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 2});
    train::ModelSpec spec = model_spec();
    train::ModelGraph graph(spec, b, true, engine);
    VariableStore& vars = out[static_cast<std::size_t>(r)];
    // Different starting points on purpose: the strategy must make rank 0's win.
    train::initialize_parameters(graph.parameters(), spec.seed + static_cast<std::uint64_t>(r), vars);
    std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(r)]));
    AllreduceUpdate update({.group = group, .parameters = trainable_names(graph), .optimizer = opt,
                            .schedule = std::make_shared<ConstantSchedule>(0.05f), .bucket_bytes = bucket_bytes,
                            .compression = compression});
    update.broadcast_variables(vars);
    for (int s = 0; s < steps; ++s) {
      auto [x, y] = data.rows(s * n * b + r * b, b);
      train::StepResult res = graph.run(x, y, vars, static_cast<std::uint64_t>(s),
                                        [&](std::size_t i, const update::GradTensor& gt) { update.on_gradient_ready(i, gt); });
      ASSERT_TRUE(update.apply(s, res.grads, vars));
    }
  }, std::chrono::seconds(60));
  return out;
}

double max_difference(const VariableStore& a, const VariableStore& b) {
  double worst = 0;
  for (const std::string& name : a.names()) {
    const Tensor& x = a.get(name);
    const Tensor& y = b.get(name);
    EXPECT_EQ(x.shape(), y.shape()) << name;
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(x.data<float>()[i]) - y.data<float>()[i]));
    }
  }
  return worst;
}

TEST(AllreduceStrategy, NWorkersAtBatchBMatchOneProcessAtBatchNbStepForStep) {
  const std::int64_t b = 8;
  const int steps = 12;
  for (int n : {1, 2, 3, 4}) {
    Data data = make_data(n * b * steps);
    auto sgd = std::make_shared<Sgd>();
    VariableStore single = train_single(data, n, b, steps, sgd);
    // Small buckets: several allreduces per step, overlapping backprop.
    auto workers = train_allreduce(data, n, b, steps, sgd, /*bucket_bytes=*/2048);
    for (int r = 0; r < n; ++r) {
      const double diff = max_difference(single, workers[static_cast<std::size_t>(r)]);
      EXPECT_LT(diff, 1e-5) << n << " workers, rank " << r;
      if (std::getenv("TRIB_SHOW_DIFF")) std::fprintf(stderr, "n=%d rank %d: %g\n", n, r, diff);
      // Workers are bit-identical to each other: same averages, same updates.
      EXPECT_EQ(max_difference(workers[0], workers[static_cast<std::size_t>(r)]), 0.0) << "rank " << r;
    }
  }
}

TEST(AllreduceStrategy, AdamWithOneBucketMatchesToo) {
  const std::int64_t b = 6;
  const int n = 3, steps = 8;
  Data data = make_data(n * b * steps);
  auto adam = std::make_shared<Adam>();
  VariableStore single = train_single(data, n, b, steps, adam);
  auto workers = train_allreduce(data, n, b, steps, adam, std::size_t{4} << 20);
  for (auto& w : workers) EXPECT_LT(max_difference(single, w), 1e-4);
}

TEST(AllreduceStrategy, Bf16CompressionStaysCloseToUncompressed) {
  const std::int64_t b = 8;
  const int n = 2, steps = 10;
  Data data = make_data(n * b * steps);
  auto sgd = std::make_shared<Sgd>();
  VariableStore single = train_single(data, n, b, steps, sgd);
  for (Compression c : {Compression::bf16, Compression::fp16}) {
    auto workers = train_allreduce(data, n, b, steps, sgd, 1024, c);
    const double diff = max_difference(single, workers[0]);
    EXPECT_LT(diff, c == Compression::bf16 ? 5e-3 : 1e-3) << compression_name(c);
    EXPECT_GT(diff, 0.0) << "the compressed run should not be exact";
    EXPECT_EQ(max_difference(workers[0], workers[1]), 0.0) << "workers must stay identical";
  }
}


// Sparse gradients are allgathered: every worker applies everyone's rows, over N, which is
// exactly what one process would apply for the concatenated batch.
TEST(AllreduceStrategy, SparseGradientsAreGatheredAndAppliedLazily) {
  const int n = 3;
  auto adam = std::make_shared<Adam>();
  auto rows_of = [](int r) { return std::vector<std::int64_t>(static_cast<std::size_t>(r + 1), 2 * r + 1); };
  auto grads_of = [&](int r) {
    std::vector<std::int64_t> ids = rows_of(r);
    ids.push_back(4);  // every rank touches row 4
    const auto k = static_cast<std::int64_t>(ids.size());
    Tensor rows = Tensor::empty(DType::f32, Shape{k, 3});
    for (std::int64_t i = 0; i < rows.numel(); ++i) rows.data<float>()[i] = static_cast<float>(r + 1) * 0.1f + i;
    Tensor dense = Tensor::full(Shape{4}, static_cast<float>(r));
    return std::vector<update::GradTensor>{{dense, {}}, {rows, Tensor::from_vector<std::int64_t>(Shape{k}, ids)}};
  };
  auto initial = [] {
    VariableStore v;
    v.set("w", Tensor::full(Shape{4}, 1.0f));
    v.set("emb", Tensor::full(Shape{10, 3}, 0.5f));
    return v;
  };

  // One process: the concatenation of every worker's rows, over n; the mean of the dense parts.
  VariableStore single = initial();
  {
    update::LocalUpdate update({{"w", "emb"}, adam, std::make_shared<ConstantSchedule>(0.1f)});
    std::vector<Tensor> rows, ids;
    std::vector<float> mean(4, 0.0f);
    std::vector<float> all_rows;
    std::vector<std::int64_t> all_ids;
    for (int r = 0; r < n; ++r) {
      auto g = grads_of(r);
      for (float v : g[1].values.span<float>()) all_rows.push_back(v / n);
      for (std::int64_t id : g[1].indices.span<std::int64_t>()) all_ids.push_back(id);
      for (int i = 0; i < 4; ++i) mean[static_cast<std::size_t>(i)] += g[0].values.data<float>()[i] / n;
    }
    const auto k = static_cast<std::int64_t>(all_ids.size());
    std::vector<update::GradTensor> grads{{Tensor::from_vector(Shape{4}, mean), {}},
                                         {Tensor::from_vector(Shape{k, 3}, all_rows),
                                          Tensor::from_vector(Shape{k}, all_ids)}};
    for (int step = 0; step < 2; ++step) ASSERT_TRUE(update.apply(step, grads, single));
  }

  ThreadGroup g(n);
  std::vector<VariableStore> workers(n);
  g.run_ok([&](int r, Group&) {
    VariableStore& vars = workers[static_cast<std::size_t>(r)];
    vars = initial();
    std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(r)]));
    AllreduceUpdate update({.group = group, .parameters = {"w", "emb"}, .optimizer = adam,
                            .schedule = std::make_shared<ConstantSchedule>(0.1f)});
    for (int step = 0; step < 2; ++step) {
      auto grads = grads_of(r);
      ASSERT_TRUE(update.apply(step, grads, vars));
      ASSERT_TRUE(grads[1].sparse());
      EXPECT_EQ(grads[1].indices.numel(), 1 + 2 + 3 + n);  // every worker's rows
    }
  });
  for (auto& w : workers) EXPECT_LT(max_difference(single, w), 1e-6);
  // Rows nobody touched kept their value (lazy update), as in one process.
  EXPECT_EQ(workers[0].get("emb").data<float>()[0], 0.5f);
}

TEST(AllreduceStrategy, DifferentModelsAreReportedWithTheVariableAndBothShapes) {
  ThreadGroup g(2);
  auto errors = g.run([&](int r, Group&) {
    VariableStore vars;
    vars.set("dense/kernel", Tensor::zeros(DType::f32, Shape{8, r == 0 ? 16 : 32}));
    std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(r)]));
    AllreduceUpdate update({.group = group, .parameters = {"dense/kernel"}, .optimizer = std::make_shared<Sgd>(),
                            .schedule = std::make_shared<ConstantSchedule>(0.1f)});
    update.broadcast_variables(vars);
  });
  for (auto& e : errors) {
    EXPECT_THAT(testing::what(e), ::testing::HasSubstr("variable 'dense/kernel'"));
    EXPECT_THAT(testing::what(e), ::testing::HasSubstr("f32[8, 16]"));
    EXPECT_THAT(testing::what(e), ::testing::HasSubstr("f32[8, 32]"));
  }
}


// start(): every worker takes the chief's step, variables and optimizer state (only the
// chief reads a checkpoint); report() after finish() still describes the run.
TEST(AllreduceStrategy, StartGivesEveryWorkerTheChiefsVariablesAndOptimizerState) {
  const int n = 3;
  ThreadGroup g(n);
  std::vector<VariableStore> vars(n);
  std::vector<std::map<std::string, Tensor>> slots(n);
  std::vector<std::string> reports(n);
  g.run_ok([&](int r, Group&) {
    VariableStore& v = vars[static_cast<std::size_t>(r)];
    v.set("a", Tensor::full(Shape{3}, static_cast<float>(r)));
    v.set("b", Tensor::full(Shape{2, 2}, static_cast<float>(10 + r)));
    std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(r)]));
    AllreduceUpdate update({.group = group, .parameters = {"a", "b"}, .optimizer = std::make_shared<Adam>(),
                            .schedule = std::make_shared<ConstantSchedule>(0.1f)});
    if (r == 0) update.restore_state({{"slot/a/m", Tensor::full(Shape{3}, 0.5f)}, {"slot/b/step", Tensor::from_vector<std::int64_t>(Shape{}, {7})}});
    EXPECT_EQ(update.start(v, nullptr), 0);
    for (const auto& [name, t] : update.state()) slots[static_cast<std::size_t>(r)][name] = t.clone();
    std::vector<update::GradTensor> grads{{Tensor::full(Shape{3}, 1.0f), {}}, {Tensor::full(Shape{2, 2}, 1.0f), {}}};
    ASSERT_TRUE(update.apply(0, grads, v));
    update.finish();
    reports[static_cast<std::size_t>(r)] = update.report();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(max_difference(vars[0], vars[static_cast<std::size_t>(r)]), 0.0);
    ASSERT_EQ(slots[static_cast<std::size_t>(r)].size(), 2u) << "rank " << r;
    EXPECT_EQ(slots[static_cast<std::size_t>(r)].at("slot/a/m").data<float>()[2], 0.5f);
    EXPECT_THAT(reports[static_cast<std::size_t>(r)], ::testing::HasSubstr("allreduce: 3 workers, 1 bucket(s)"));
  }
  EXPECT_EQ(vars[2].get("b").shape(), (Shape{2, 2}));
}

// A model part without parameters (a replicated pipeline stage holding only a flatten) has
// nothing to exchange: its steps apply at once (they used to start a second communication
// thread over a running one, and abort).
TEST(AllreduceStrategy, AModelWithoutParametersTakesItsStepsWithNothingToExchange) {
  const int n = 2;
  ThreadGroup g(n);
  g.run_ok([&](int r, Group&) {
    VariableStore v;
    std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(r)]));
    AllreduceUpdate update({.group = group, .parameters = {}, .optimizer = std::make_shared<Sgd>(),
                            .schedule = std::make_shared<ConstantSchedule>(0.1f)});
    EXPECT_EQ(update.start(v, nullptr), 0);
    for (std::int64_t step = 0; step < 3; ++step) {
      std::vector<update::GradTensor> grads;
      EXPECT_TRUE(update.apply(step, grads, v));
    }
    update.finish();
  });
}

}  // namespace
}  // namespace trib::collectives
