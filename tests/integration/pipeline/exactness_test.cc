// Pipeline training equals one process training at batch M x b, step for step: K stages as
// threads over the in-process transport, with and without replicas, under both schedules.
#include <gtest/gtest.h>

#include <cmath>

#include "integration/pipeline/stage_threads.h"

namespace trib::pipeline {
namespace {

using testing::Batch;

constexpr std::int64_t kFeatures = 12, kHidden = 16, kClasses = 5;
constexpr std::uint64_t kSeed = 7;
constexpr float kLr = 0.1f;

struct PipeRun {
  int layers = 4;
  int stages = 2;
  int micro_batches = 4;
  int replicas = 1;
  std::int64_t micro_batch = 3;
  int steps = 4;
  config::PipelineSchedule schedule = config::PipelineSchedule::one_f_one_b;
  float l2 = 0.001f;
};

// Every variable after each step, one process at batch M x b (x R for replicas, which each
// take their own M x b rows of the batch).
std::vector<std::map<std::string, std::vector<float>>> reference(const PipeRun& s, const std::vector<Batch>& batches) {
  EngineContext engine(EngineOptions{1, 1});
  train::ModelSpec spec{testing::mlp(s.layers, kFeatures, kHidden, kClasses, s.l2), Shape{kFeatures}, kClasses, kSeed};
  const std::int64_t batch = s.micro_batch * s.micro_batches * s.replicas;
  train::ModelGraph graph(spec, batch, true, engine);
  VariableStore vars;
  train::initialize_parameters(graph.parameters(), kSeed, vars);
  std::vector<std::string> names;
  for (const auto& p : graph.trainable_parameters()) names.push_back(p.name);
  update::LocalUpdate update({names, testing::momentum_sgd(), testing::constant_lr(kLr)});
  std::vector<std::map<std::string, std::vector<float>>> out;
  for (int step = 1; step <= s.steps; ++step) {
    const Batch& b = batches[static_cast<std::size_t>(step - 1)];
    train::StepResult r = graph.run(b.features, b.labels, vars, static_cast<std::uint64_t>(step));
    update.apply(step, r.grads, vars);
    std::map<std::string, std::vector<float>> now;
    for (const std::string& n : names) now[n] = vars.get(n).to_vector<float>();
    out.push_back(now);
  }
  return out;
}

// The same run as K stages x R replicas of threads; every stage's variables after each step.
std::vector<std::map<std::string, std::vector<float>>> pipelined(const PipeRun& s, const std::vector<Batch>& batches,
                                                                 std::vector<StepStats>* stage_stats = nullptr) {
  auto hub = std::make_shared<net::InProcHub>();
  auto model = testing::mlp(s.layers, kFeatures, kHidden, kClasses, s.l2);
  const Partition part = even_partition(s.layers, s.stages);
  const int n = s.stages * s.replicas;
  std::vector<std::shared_ptr<net::Transport>> transports;
  std::vector<std::unique_ptr<StageLinks>> links;
  std::vector<std::string> addresses;
  for (int w = 0; w < n; ++w) {
    transports.push_back(testing::inproc(hub, w));
    links.push_back(std::make_unique<StageLinks>(StageLinksOptions{transports.back(), w % s.stages, s.stages, w / s.stages}));
    addresses.push_back(links.back()->listen("stage:0"));
  }
  // One allreduce group per stage, of its R copies.
  std::vector<std::shared_ptr<collectives::Group>> groups(static_cast<std::size_t>(n));
  if (s.replicas > 1) {
    std::vector<std::thread> form;
    for (int st = 0; st < s.stages; ++st) {
      std::vector<collectives::Endpoint> eps;
      std::vector<std::string> addrs;
      for (int r = 0; r < s.replicas; ++r) {
        eps.push_back(collectives::Endpoint::listen(transports[static_cast<std::size_t>(r * s.stages + st)], "coll:0"));
        addrs.push_back(eps.back().address());
      }
      for (int r = 0; r < s.replicas; ++r)
        form.emplace_back([&groups, &s, st, r, addrs, ep = std::make_shared<collectives::Endpoint>(std::move(eps[static_cast<std::size_t>(r)]))] {
          collectives::GroupOptions o;
          o.rank = r;
          o.size = s.replicas;
          o.addresses = addrs;
          groups[static_cast<std::size_t>(r * s.stages + st)] = collectives::Group::form(std::move(*ep), o);
        });
    }
    for (auto& t : form) t.join();
  }
  std::vector<std::vector<std::map<std::string, std::vector<float>>>> per(static_cast<std::size_t>(n));
  std::vector<StepStats> stats(static_cast<std::size_t>(n));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int w = 0; w < n; ++w) {
    threads.emplace_back([&, w] {
      try {
        const int st = w % s.stages, rep = w / s.stages;
        auto& l = *links[static_cast<std::size_t>(w)];
        l.connect(st + 1 < s.stages ? addresses[static_cast<std::size_t>(w + 1)] : "");
        EngineContext engine(EngineOptions{1, 1});
        StageModel sm({model, Shape{kFeatures}, kClasses, kSeed, part.stages[static_cast<std::size_t>(st)],
                       st + 1 == s.stages, s.micro_batch},
                      engine);
        std::unique_ptr<update::UpdateStrategy> up;
        if (s.replicas > 1) {
          collectives::AllreduceUpdateOptions ao;
          ao.group = groups[static_cast<std::size_t>(w)];
          ao.parameters = sm.trainable_names();
          ao.optimizer = testing::momentum_sgd();
          ao.schedule = testing::constant_lr(kLr);
          up = std::make_unique<collectives::AllreduceUpdate>(std::move(ao));
        } else {
          up = std::make_unique<update::LocalUpdate>(
              update::LocalUpdateOptions{sm.trainable_names(), testing::momentum_sgd(), testing::constant_lr(kLr)});
        }
        PipelineStage stage({&sm, &l, std::move(up), s.schedule, st, s.stages, s.micro_batches});
        VariableStore vars;
        stage.start(vars, nullptr);
        const std::int64_t rows = s.micro_batch * s.micro_batches;
        for (int step = 1; step <= s.steps; ++step) {
          Tensor f, y;
          if (st == 0) {
            const Batch& b = batches[static_cast<std::size_t>(step - 1)];
            f = slice_rows(b.features, rep * rows, rows);
            y = slice_rows(b.labels, rep * rows, rows);
          }
          StepStats ss = stage.step(step, s.steps, f, y, vars);
          stats[static_cast<std::size_t>(w)] = ss;
          std::map<std::string, std::vector<float>> now;
          for (const std::string& name : sm.trainable_names()) now[name] = vars.get(name).to_vector<float>();
          per[static_cast<std::size_t>(w)].push_back(now);
        }
        stage.finish();
      } catch (...) {
        errors[static_cast<std::size_t>(w)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (stage_stats) *stage_stats = stats;
  // Replicas must agree with each other; replica 0's stages make up the model.
  std::vector<std::map<std::string, std::vector<float>>> out(static_cast<std::size_t>(s.steps));
  for (int w = 0; w < n; ++w)
    for (int step = 0; step < s.steps; ++step)
      for (auto& [name, v] : per[static_cast<std::size_t>(w)][static_cast<std::size_t>(step)]) {
        auto& slot = out[static_cast<std::size_t>(step)][name];
        if (w < s.stages) slot = v;
        else EXPECT_EQ(slot, v) << name << " differs between replicas at step " << step + 1;
      }
  return out;
}

void expect_same_training(const PipeRun& s) {
  const std::int64_t batch = s.micro_batch * s.micro_batches * s.replicas;
  std::vector<Batch> batches = testing::random_batches(s.steps, batch, kFeatures, kClasses, 99);
  auto want = reference(s, batches);
  auto got = testing::within(120, [&] { return pipelined(s, batches); });
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t step = 0; step < want.size(); ++step) {
    ASSERT_EQ(got[step].size(), want[step].size()) << "step " << step + 1;
    for (const auto& [name, w] : want[step]) {
      const auto& g = got[step].at(name);
      ASSERT_EQ(g.size(), w.size());
      for (std::size_t i = 0; i < w.size(); ++i)
        ASSERT_NEAR(g[i], w[i], 2e-5f + 1e-4f * std::fabs(w[i])) << name << "[" << i << "] at step " << step + 1;
    }
  }
}

TEST(PipelineExactness, TwoStages1F1B) { expect_same_training(PipeRun{.stages = 2}); }

TEST(PipelineExactness, ThreeStages1F1B) { expect_same_training(PipeRun{.layers = 5, .stages = 3}); }

TEST(PipelineExactness, TwoStagesGPipe) { expect_same_training(PipeRun{.stages = 2, .schedule = config::PipelineSchedule::gpipe}); }

TEST(PipelineExactness, ThreeStagesGPipeMoreStagesThanMicroBatches) {
  expect_same_training(PipeRun{.layers = 3, .stages = 3, .micro_batches = 2, .schedule = config::PipelineSchedule::gpipe});
}

TEST(PipelineExactness, TwoStagesTwoReplicas) { expect_same_training(PipeRun{.stages = 2, .replicas = 2}); }

TEST(PipelineExactness, ThreeStagesTwoReplicas) { expect_same_training(PipeRun{.layers = 5, .stages = 3, .replicas = 2}); }

TEST(PipelineExactness, OneStageIsLocalTraining) { expect_same_training(PipeRun{.layers = 2, .stages = 1}); }

// 1F1B keeps at most K - s micro-batches' inputs on stage s; GPipe keeps all M.
TEST(PipelineSchedules, OneFOneBStashesNoMoreThanGPipe) {
  PipeRun s{.layers = 4, .stages = 4, .micro_batches = 8, .steps = 1};
  const std::int64_t batch = s.micro_batch * s.micro_batches;
  auto batches = testing::random_batches(1, batch, kFeatures, kClasses, 3);
  std::vector<StepStats> f1b, gp;
  testing::within(120, [&] { return pipelined(s, batches, &f1b); });
  s.schedule = config::PipelineSchedule::gpipe;
  testing::within(120, [&] { return pipelined(s, batches, &gp); });
  for (int st = 0; st < s.stages; ++st) {
    const std::size_t in = st == 0 ? kFeatures * 4 * s.micro_batch : kHidden * 4 * s.micro_batch;
    EXPECT_EQ(gp[static_cast<std::size_t>(st)].stash_bytes, in * 8) << "stage " << st;
    EXPECT_EQ(f1b[static_cast<std::size_t>(st)].stash_bytes, in * static_cast<std::size_t>(s.stages - st)) << "stage " << st;
    EXPECT_LE(f1b[static_cast<std::size_t>(st)].peak_activation_bytes, gp[static_cast<std::size_t>(st)].peak_activation_bytes);
  }
}

// The step's time breakdown (bench=pipeline's) accounts for each part once: the parts are
// disjoint stretches of the step, busy is the work among them, and a stage that receives
// has waited, one that sends has sent.
TEST(PipelineSchedules, StepTimeBreakdownAddsUp) {
  PipeRun s{.layers = 3, .stages = 3, .micro_batches = 4, .steps = 1};
  auto batches = testing::random_batches(1, s.micro_batch * s.micro_batches, kFeatures, kClasses, 5);
  std::vector<StepStats> st;
  testing::within(120, [&] { return pipelined(s, batches, &st); });
  for (int i = 0; i < s.stages; ++i) {
    const StepStats& r = st[static_cast<std::size_t>(i)];
    EXPECT_GT(r.compute_s, 0) << "stage " << i;
    EXPECT_GT(r.update_s, 0) << "stage " << i;
    EXPECT_DOUBLE_EQ(r.busy_s, r.compute_s + r.accumulate_s + r.update_s) << "stage " << i;
    EXPECT_LE(r.compute_s + r.accumulate_s + r.wait_s + r.send_s + r.update_s, r.wall_s) << "stage " << i;
    EXPECT_GT(r.send_s, 0) << "stage " << i << " sends activations or gradients";
    EXPECT_TRUE(i != 0 || r.wait_s > 0) << "stage 0 receives its gradients";
  }
}

}  // namespace
}  // namespace trib::pipeline
