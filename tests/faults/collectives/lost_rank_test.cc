// RELIABILITY.md row 2 for allreduce, ranks as threads: a rank's connections close in the
// middle of a step's exchange; the survivors re-form the group in the next generation, roll
// back to the step every one of them can stand at, and go on with N-1 ranks at the linearly
// rescaled learning rate, ending with identical variables equal to those of one process
// that took the same steps.
#include <gtest/gtest.h>

#include <cmath>
#include <latch>

#include "collectives/group_core.h"
#include "faults/collectives/survivors.h"
#include "trib/core/random.h"
#include "trib/engine/context.h"
#include "trib/nn/layers.h"
#include "trib/nn/sequential.h"
#include "trib/optim/adam.h"
#include "trib/optim/schedule.h"
#include "trib/optim/sgd.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"

namespace trib::collectives {
namespace {

using testing::Survivors;
using testing::ThreadGroup;

constexpr std::int64_t kInput = 12, kClasses = 5, kBatch = 8;
constexpr int kRanks = 3, kSteps = 10, kLostAt = 4;
constexpr float kLr = 0.05f;

train::ModelSpec model_spec() {
  auto m = std::make_shared<nn::Sequential>();
  m->add<nn::Dense>(nn::DenseOptions{.units = 32, .activation = nn::Activation::relu});
  m->add<nn::Dense>(nn::DenseOptions{.units = 16, .activation = nn::Activation::tanh});
  m->add<nn::Dense>(nn::DenseOptions{.units = kClasses});
  return {m, Shape{kInput}, kClasses, /*seed=*/3};
}

struct Data {
  Tensor x, y;
  // Rank r's batch of step s: rows [(s * kRanks + r) * kBatch, ...) whatever the group's size,
  // so the ranks of a step together hold one contiguous block (the single process's batch).
  std::pair<Tensor, Tensor> rows(std::int64_t begin, std::int64_t n) const {
    Tensor bx = Tensor::empty(DType::f32, Shape{n, kInput});
    Tensor by = Tensor::empty(DType::i32, Shape{n});
    std::copy_n(x.data<float>() + begin * kInput, n * kInput, bx.data<float>());
    std::copy_n(y.data<std::int32_t>() + begin, n, by.data<std::int32_t>());
    return {bx, by};
  }
  std::pair<Tensor, Tensor> batch(int step, int rank, int ranks) const {
    return rows((std::int64_t{step} * kRanks + rank) * kBatch, ranks * kBatch);
  }
};

Data make_data() {
  const std::int64_t n = (kSteps + 2) * kRanks * kBatch;
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

double max_difference(const VariableStore& a, const VariableStore& b) {
  double worst = 0;
  for (const std::string& name : a.names()) {
    const Tensor& x = a.get(name);
    const Tensor& y = b.get(name);
    for (std::int64_t i = 0; i < x.numel(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(x.data<float>()[i]) - y.data<float>()[i]));
  }
  return worst;
}

struct RankResult {
  VariableStore vars;
  std::vector<update::Rollback> rollbacks;
  int regroups = 0, size = 0, rank = -1;
  std::uint64_t generation = 0;
  std::int64_t steps_redone = 0;
  double lr_factor = 0;
  float lr = 0;
};

AllreduceUpdateOptions options(std::shared_ptr<Group> group, const train::ModelGraph& graph, Regroup regroup,
                               std::shared_ptr<const Optimizer> optimizer = std::make_shared<Sgd>()) {
  return {.group = std::move(group), .parameters = trainable_names(graph), .optimizer = std::move(optimizer),
          .schedule = std::make_shared<ConstantSchedule>(kLr), .bucket_bytes = 512, .regroup = std::move(regroup),
          .linear_scaling = true};
}

TEST(AllreduceLostRank, SurvivorsRegroupRollBackAndTrainOnAsOneProcessWould) {
  const Data data = make_data();
  ThreadGroup g(kRanks, GroupOptions{.op_timeout = std::chrono::seconds(20)});
  Survivors survivors(g);
  std::vector<RankResult> out(kRanks);
  g.run_ok(
      [&](int original, Group&) {
        EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 2});
        train::ModelSpec spec = model_spec();
        train::ModelGraph graph(spec, kBatch, true, engine);
        RankResult& res = out[static_cast<std::size_t>(original)];
        train::initialize_parameters(graph.parameters(), spec.seed, res.vars);
        std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(original)]));
        AllreduceUpdate update(options(group, graph, survivors.regroup(original)));
        int rank = original, ranks = kRanks;
        for (int s = 0; s < kSteps;) {
          auto [x, y] = data.batch(s, rank, 1);
          if (original == 2 && s == kLostAt) {
            // Dies mid-exchange: every bucket but the first gradient's sent, then every
            // connection closes (as a killed process's do).
            train::StepResult r = graph.run(x, y, res.vars, static_cast<std::uint64_t>(s));
            for (std::size_t i = r.grads.size(); i-- > 1;) update.on_gradient_ready(i, r.grads[i]);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            survivors.lose(2);
            group->core().shut_down();
            return;
          }
          train::StepResult r = graph.run(x, y, res.vars, static_cast<std::uint64_t>(s),
                                          [&](std::size_t i, const update::GradTensor& t) { update.on_gradient_ready(i, t); });
          if (update.apply(s, r.grads, res.vars)) {
            ++s;
            continue;
          }
          std::optional<update::Rollback> rb = update.take_rollback();
          ASSERT_TRUE(rb) << "rank " << original << " step " << s << ": apply() refused without a rollback";
          res.rollbacks.push_back(*rb);
          s = static_cast<int>(rb->step);
          rank = rb->rank;
          ranks = rb->workers;
        }
        (void)ranks;
        res.regroups = update.regroups();
        res.size = update.group().size();
        res.rank = update.group().rank();
        res.generation = update.group().generation();
        res.steps_redone = update.steps_redone();
        res.lr_factor = update.lr_factor();
        res.lr = update.learning_rate(kSteps);
        update.finish();
      },
      std::chrono::seconds(60));

  // One process: the first kLostAt steps on the three ranks' rows, the rest on the two
  // survivors' (the new ranks 0 and 1 take rows 0 and 1 of each step) at lr * 2/3.
  EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 1});
  train::ModelSpec spec = model_spec();
  VariableStore ref;
  {
    train::ModelGraph three(spec, kRanks * kBatch, true, engine), two(spec, 2 * kBatch, true, engine);
    train::initialize_parameters(three.parameters(), spec.seed, ref);
    update::LocalUpdate before({trainable_names(three), std::make_shared<Sgd>(), std::make_shared<ConstantSchedule>(kLr)});
    for (int s = 0; s < kLostAt; ++s) {
      auto [x, y] = data.batch(s, 0, kRanks);
      train::StepResult r = three.run(x, y, ref, static_cast<std::uint64_t>(s));
      ASSERT_TRUE(before.apply(s, r.grads, ref));
    }
    update::LocalUpdate after(
        {trainable_names(two), std::make_shared<Sgd>(), std::make_shared<ConstantSchedule>(kLr * 2.0f / 3.0f)});
    after.restore_state(before.state());
    for (int s = kLostAt; s < kSteps; ++s) {
      auto [x, y] = data.batch(s, 0, 2);
      train::StepResult r = two.run(x, y, ref, static_cast<std::uint64_t>(s));
      ASSERT_TRUE(after.apply(s, r.grads, ref));
    }
  }
  for (int r : {0, 1}) {
    const RankResult& res = out[static_cast<std::size_t>(r)];
    SCOPED_TRACE(fmt::format("rank {}", r));
    ASSERT_EQ(res.rollbacks.size(), 1u);
    EXPECT_EQ(res.rollbacks[0].step, kLostAt) << "no survivor could complete the step the lost rank never finished";
    EXPECT_EQ(res.rollbacks[0].workers, 2);
    EXPECT_EQ(res.rollbacks[0].rank, r);
    EXPECT_NE(res.rollbacks[0].message.find("with 2 workers (was 3; this one rank"), std::string::npos) << res.rollbacks[0].message;
    EXPECT_EQ(res.regroups, 1);
    EXPECT_EQ(res.size, 2);
    EXPECT_EQ(res.rank, r);
    EXPECT_EQ(res.generation, 1u);
    EXPECT_EQ(res.steps_redone, 0);
    EXPECT_DOUBLE_EQ(res.lr_factor, 2.0 / 3.0);
    EXPECT_FLOAT_EQ(res.lr, static_cast<float>(kLr * 2.0 / 3.0));
    EXPECT_LT(max_difference(res.vars, ref), 1e-4) << "the survivors took the steps one process would have";
  }
  EXPECT_EQ(max_difference(out[0].vars, out[1].vars), 0.0) << "the survivors' variables are identical";
}

// Survivors that stand at different steps (one applied step s, the other's exchange of s
// failed): both go back to s with the variables and optimizer state of the one behind, and
// each rewinds its data to where it stood after s - 1.
TEST(AllreduceLostRank, ASurvivorAheadTakesTheStateOfTheOneBehind) {
  const Data data = make_data();
  ThreadGroup g(kRanks, GroupOptions{.op_timeout = std::chrono::seconds(20)});
  Survivors survivors(g);
  std::vector<RankResult> out(kRanks);
  std::vector<std::int64_t> at(kRanks, 0);
  // Every rank has its result of the common steps before rank 2 goes: otherwise a survivor
  // still fetching step 2's data from it would roll back further than this test sets up.
  std::latch common_done(kRanks);
  g.run_ok(
      [&](int original, Group&) {
        EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 2});
        train::ModelSpec spec = model_spec();
        train::ModelGraph graph(spec, kBatch, true, engine);
        RankResult& res = out[static_cast<std::size_t>(original)];
        train::initialize_parameters(graph.parameters(), spec.seed, res.vars);
        std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(original)]));
        AllreduceUpdate update(options(group, graph, survivors.regroup(original), std::make_shared<Adam>()));
        const int common = 3;
        for (int s = 0; s < common; ++s) {
          auto [x, y] = data.batch(s, original, 1);
          train::StepResult r = graph.run(x, y, res.vars, static_cast<std::uint64_t>(s));
          update.set_data_cursor(fmt::format("after {}", s));
          ASSERT_TRUE(update.apply(s, r.grads, res.vars));
        }
        common_done.arrive_and_wait();
        if (original == 2) {
          survivors.lose(2);
          group->core().shut_down();
          return;
        }
        auto [x, y] = data.batch(common, original, 1);
        train::StepResult r = graph.run(x, y, res.vars, common);
        std::int64_t step = common;
        if (original == 0) {
          // As if rank 0 had applied step 3 and was exchanging step 4's gradients.
          for (float& v : res.vars.get(res.vars.names().front()).span<float>()) v += 1.0f;
          step = common + 1;
        }
        update.set_data_cursor(fmt::format("after {}", step));
        ASSERT_FALSE(update.apply(step, r.grads, res.vars));
        std::optional<update::Rollback> rb = update.take_rollback();
        ASSERT_TRUE(rb);
        res.rollbacks.push_back(*rb);
        res.steps_redone = update.steps_redone();
        EXPECT_FALSE(update.state().empty()) << "Adam keeps moments";
        for (auto& [name, t] : update.state())
          if (t.dtype() == DType::f32) res.vars.set("slot/" + name, t.clone());
        EXPECT_FALSE(update.take_rollback()) << "a rollback is told once";
        update.finish();
      },
      std::chrono::seconds(60));
  for (int r : {0, 1}) {
    const RankResult& res = out[static_cast<std::size_t>(r)];
    SCOPED_TRACE(fmt::format("rank {}", r));
    ASSERT_EQ(res.rollbacks.size(), 1u);
    EXPECT_EQ(res.rollbacks[0].step, 3);
    ASSERT_TRUE(res.rollbacks[0].data_cursor);
    EXPECT_EQ(*res.rollbacks[0].data_cursor, "after 2");
    EXPECT_EQ(res.steps_redone, 1);
  }
  EXPECT_EQ(max_difference(out[0].vars, out[1].vars), 0.0) << "rank 0's extra step was undone, optimizer state too";
}

// What the survivors of a group sharing cursors learn (AllreduceUpdateOptions::share_cursors):
// rank 2 leaves after `common` steps, each rank's cursor of step s being "rank R after s".
std::vector<update::Rollback> rollbacks_sharing_cursors(int common, bool share) {
  const Data data = make_data();
  ThreadGroup g(kRanks, GroupOptions{.op_timeout = std::chrono::seconds(20)});
  Survivors survivors(g);
  std::vector<update::Rollback> out(kRanks);
  std::latch common_done(kRanks);
  g.run_ok(
      [&](int original, Group&) {
        EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 2});
        train::ModelSpec spec = model_spec();
        train::ModelGraph graph(spec, kBatch, true, engine);
        VariableStore vars;
        train::initialize_parameters(graph.parameters(), spec.seed, vars);
        std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(original)]));
        AllreduceUpdateOptions o = options(group, graph, survivors.regroup(original));
        o.share_cursors = share;
        AllreduceUpdate update(std::move(o));
        for (int s = 0; s < common; ++s) {
          auto [x, y] = data.batch(s, original, 1);
          train::StepResult r = graph.run(x, y, vars, static_cast<std::uint64_t>(s));
          update.set_data_cursor(fmt::format("rank {} after {}", original, s));
          ASSERT_TRUE(update.apply(s, r.grads, vars));
        }
        common_done.arrive_and_wait();
        if (original == 2) {
          survivors.lose(2);
          group->core().shut_down();
          return;
        }
        auto [x, y] = data.batch(common, original, 1);
        train::StepResult r = graph.run(x, y, vars, common);
        update.set_data_cursor(fmt::format("rank {} after {}", original, common));
        ASSERT_FALSE(update.apply(common, r.grads, vars));
        std::optional<update::Rollback> rb = update.take_rollback();
        ASSERT_TRUE(rb);
        out[static_cast<std::size_t>(original)] = *rb;
        update.finish();
      },
      std::chrono::seconds(60));
  return out;
}

// Every survivor gets every member's cursor of the last step they all completed, the lost
// rank's included, in the old group's rank order: the survivors can merge the group's whole
// data progress there (a stream job: StreamHooks::on_regroup).
TEST(AllreduceLostRank, SharedCursorsGiveSurvivorsTheLostRanksCursorOfTheRollbackStep) {
  const std::vector<update::Rollback> rb = rollbacks_sharing_cursors(3, true);
  for (int r : {0, 1}) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    EXPECT_EQ(rb[static_cast<std::size_t>(r)].step, 3);
    EXPECT_EQ(rb[static_cast<std::size_t>(r)].group_cursors,
              (std::vector<std::string>{"rank 0 after 2", "rank 1 after 2", "rank 2 after 2"}));
    EXPECT_EQ(rb[static_cast<std::size_t>(r)].no_group_cursors, "");
  }
}

// Lost before the group finished a step: nobody knows the lost rank's cursor, and the
// rollback says why; without share_cursors no cursors are exchanged at all.
TEST(AllreduceLostRank, WithoutSharedCursorsOfTheRollbackStepTheRollbackSaysWhy) {
  const std::vector<update::Rollback> first = rollbacks_sharing_cursors(0, true);
  for (const update::Rollback& rb : {first[0], first[1]}) {
    EXPECT_EQ(rb.step, 0);
    EXPECT_TRUE(rb.group_cursors.empty());
    EXPECT_NE(rb.no_group_cursors.find("data cursors before step 0 are not known"), std::string::npos)
        << rb.no_group_cursors;
  }
  const update::Rollback rb = rollbacks_sharing_cursors(3, false)[1];
  EXPECT_EQ(rb.step, 3);
  EXPECT_TRUE(rb.group_cursors.empty());
  EXPECT_EQ(rb.no_group_cursors, "the group shares no data cursors");
}

// Without a Regroup a lost rank still ends the run, naming it.
TEST(AllreduceLostRank, WithoutRegroupTheFailureEndsTheRun) {
  const Data data = make_data();
  ThreadGroup g(2, GroupOptions{.op_timeout = std::chrono::seconds(20)});
  auto errors = g.run(
      [&](int original, Group&) {
        EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 1});
        train::ModelSpec spec = model_spec();
        train::ModelGraph graph(spec, kBatch, true, engine);
        VariableStore vars;
        train::initialize_parameters(graph.parameters(), spec.seed, vars);
        std::shared_ptr<Group> group(std::move(g.groups[static_cast<std::size_t>(original)]));
        AllreduceUpdate update(options(group, graph, nullptr));
        if (original == 1) {
          group->core().shut_down();
          return;
        }
        auto [x, y] = data.batch(0, 0, 1);
        train::StepResult r = graph.run(x, y, vars, 0);
        update.apply(0, r.grads, vars);
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(errors[0]);
  EXPECT_THROW(std::rethrow_exception(errors[0]), Unavailable);
  EXPECT_NE(testing::what(errors[0]).find("rank 1"), std::string::npos) << testing::what(errors[0]);
}

}  // namespace
}  // namespace trib::collectives
