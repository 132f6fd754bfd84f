#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "trib/core/error.h"
#include "trib/pipeline/planner.h"

namespace trib::pipeline {
namespace {

LayerCost layer(const std::string& name, double ms, double param_mb) {
  LayerCost c;
  c.name = name;
  c.ms = ms;
  c.parameter_bytes = static_cast<std::int64_t>(param_mb * 1024 * 1024);
  c.input_bytes = c.output_bytes = 1024;
  return c;
}

PlanOptions options(int stages, double memory_mb = 0) {
  PlanOptions o;
  o.stages = stages;
  o.micro_batches = 4;
  o.memory_mb = memory_mb;
  return o;
}

TEST(Planner, MinimisesTheSlowestStage) {
  std::vector<LayerCost> c{layer("a", 1, 0), layer("b", 1, 0), layer("c", 4, 0), layer("d", 1, 0), layer("e", 1, 0)};
  Plan p = plan_partition(c, options(3));
  // Whatever the cut, the stage holding c takes 4 ms; the best plan gives it nothing more.
  double slowest = 0;
  for (const StageEstimate& s : p.stages) slowest = std::max(slowest, s.ms);
  EXPECT_DOUBLE_EQ(slowest, 4);
  EXPECT_EQ(p.stages.size(), 3u);
  EXPECT_EQ(p.cut_bytes.size(), 2u);
}

TEST(Planner, BalancesEqualLayers) {
  std::vector<LayerCost> c(6, layer("x", 2, 0));
  Plan p = plan_partition(c, options(3));
  for (const StageEstimate& s : p.stages) EXPECT_DOUBLE_EQ(s.ms, 4);
}

TEST(Planner, AmongCutsAsFastItSendsTheFewestBytes) {
  // Whichever stage holds b takes 5 ms; a cut after a (1 MB) or after c (1 KB) is as fast.
  std::vector<LayerCost> c{layer("a", 0, 0), layer("b", 5, 0), layer("c", 1, 0), layer("d", 0.1, 0)};
  c[1].input_bytes = 1 << 20;
  c[2].input_bytes = c[3].input_bytes = 1 << 10;
  EXPECT_EQ(plan_partition(c, options(3)).partition.to_string(), "0-1,2-2,3-3");
}

TEST(Planner, TheMemoryLimitMovesTheCut) {
  // Fastest would be {a,b} {c}: 2 ms each; but a and b together hold 2 x (6 + 6) MB.
  std::vector<LayerCost> c{layer("a", 1, 6), layer("b", 1, 6), layer("c", 2, 1)};
  Plan free = plan_partition(c, options(2));
  EXPECT_EQ(free.partition.to_string(), "0-1,2-2");
  Plan limited = plan_partition(c, options(2, 20));
  EXPECT_EQ(limited.partition.to_string(), "0-0,1-2");
  for (const StageEstimate& s : limited.stages) EXPECT_LE(s.mb, 20);
}

TEST(Planner, AnImpossibleLimitNamesTheSmallestThatWorks) {
  std::vector<LayerCost> c{layer("a", 1, 10), layer("b", 1, 10)};
  try {
    plan_partition(c, options(2, 5));
    FAIL();
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("strategy.memory_mb 5 is too small"), std::string::npos) << what;
    // Each layer alone: its values and gradients (20 MB) and one or two kept inputs.
    EXPECT_NE(what.find("the smallest limit that works is 20.0 MB"), std::string::npos) << what;
  }
}

TEST(Planner, OneFOneBKeepsFewerInputsThanGPipe) {
  std::vector<LayerCost> c(4, layer("x", 1, 0));
  for (auto& l : c) l.input_bytes = 1024 * 1024;
  PlanOptions f1b = options(4), gp = options(4);
  gp.schedule = config::PipelineSchedule::gpipe;
  EXPECT_DOUBLE_EQ(stage_memory_mb(c, {0, 1}, 0, gp), 4);   // M = 4 inputs of 1 MB
  EXPECT_DOUBLE_EQ(stage_memory_mb(c, {0, 1}, 0, f1b), 4);  // K - 0 = 4
  EXPECT_DOUBLE_EQ(stage_memory_mb(c, {3, 4}, 3, f1b), 1);  // the last stage: one
}

TEST(Planner, TheLastStageRunsNoSeparateForwardPass) {
  // Each layer: 3 ms before the last stage, of which 1.5 ms its separate forward pass, which
  // the last stage does not run. Counting layers (or their ms alone) cuts 2|2: 6 ms then
  // 3 ms; the last stage's layers cost 1.5 ms each, so 1|3 is faster: 3 ms, 4.5 ms.
  std::vector<LayerCost> c(4, layer("x", 3, 0));
  for (auto& l : c) l.forward_ms = 1.5;
  c.back().forward_ms = 0, c.back().ms = 1.5;  // the model's last layer: measured as the last stage
  Plan p = plan_partition(c, options(2));
  EXPECT_EQ(p.partition.to_string(), "0-0,1-3");
  EXPECT_DOUBLE_EQ(p.stages[0].ms, 3);
  EXPECT_DOUBLE_EQ(p.stages[1].ms, 4.5);
  EXPECT_DOUBLE_EQ(stage_ms(c, {1, 4}, false), 7.5);  // the same layers before the last stage
}

TEST(Planner, WholeStageTimesAreWhatThePlanReports) {
  // Six 1 ms layers: summed, 0-2 | 3-5 is even (3 ms each). Timed as whole stages, a stage
  // holding layer 3 costs 2 ms more: the cut stays (3 | 5 beats 4 + 2 | 2), and the plan
  // reports the 5 ms timed, not the 3 ms summed.
  std::vector<LayerCost> c(6, layer("x", 1, 0));
  std::vector<std::pair<int, int>> timed;
  const StageTimer timer = [&](StageRange r, bool last) {
    EXPECT_EQ(last, r.end == 6);
    timed.emplace_back(r.begin, r.end);
    return stage_ms(c, r, last) + (r.begin <= 3 && 3 < r.end ? 2.0 : 0.0);
  };
  EXPECT_EQ(plan_partition(c, options(2)).partition.to_string(), "0-2,3-5");
  Plan p = plan_partition(c, options(2), timer);
  EXPECT_EQ(p.partition.to_string(), "0-2,3-5");
  EXPECT_DOUBLE_EQ(p.stages[1].ms, 5);            // the plan reports what was timed
  // Only stages around the summed cut (at 3, moved by up to kRefineShift) are timed, once each.
  std::sort(timed.begin(), timed.end());
  EXPECT_EQ(std::unique(timed.begin(), timed.end()), timed.end());
  for (const auto& [b, e] : timed) EXPECT_TRUE((b == 0 && e >= 1 && e <= 5) || (e == 6 && b >= 1 && b <= 5)) << b << "-" << e;
  EXPECT_EQ(timed.size(), 10u);
}

TEST(Planner, WholeStageTimesMoveTheCut) {
  // Summed, 0-2 | 3-5 (3 and 3 ms). Timed whole at 0.6 ms a layer before the cut and 0.5
  // after, the cut stays (1.8 | 1.5, against 2.4 | 1.0 one layer later); at 0.5 before and
  // 1.0 after, it moves one layer right (2 | 2, against 1.5 | 3 at the summed cut).
  std::vector<LayerCost> c(6, layer("x", 1, 0));
  const StageTimer timer = [&](StageRange r, bool last) { return last ? 0.5 * r.size() : 0.6 * r.size(); };
  Plan p = plan_partition(c, options(2), timer);
  EXPECT_EQ(p.partition.to_string(), "0-2,3-5");
  const StageTimer first_cheap = [&](StageRange r, bool last) { return last ? 1.0 * r.size() : 0.5 * r.size(); };
  p = plan_partition(c, options(2), first_cheap);
  EXPECT_EQ(p.partition.to_string(), "0-3,4-5");
  EXPECT_DOUBLE_EQ(p.stages[0].ms, 2);
  EXPECT_DOUBLE_EQ(p.stages[1].ms, 2);
}

TEST(Planner, WholeStageTimesKeepTheMemoryLimit) {
  // The timer would prefer 0-1 | 2-2, which the limit forbids (as in TheMemoryLimitMovesTheCut).
  std::vector<LayerCost> c{layer("a", 1, 6), layer("b", 1, 6), layer("c", 2, 1)};
  const StageTimer timer = [&](StageRange r, bool) { return r.begin == 0 && r.end == 2 ? 0.1 : 10.0 * r.size(); };
  Plan p = plan_partition(c, options(2, 20), timer);
  EXPECT_EQ(p.partition.to_string(), "0-0,1-2");
  for (const StageEstimate& s : p.stages) EXPECT_LE(s.mb, 20);
}

TEST(Planner, TheTableNamesStagesLayersAndCuts) {
  std::vector<LayerCost> c{layer("dense_0", 1, 1), layer("dense_1", 1, 1)};
  const std::string t = plan_partition(c, options(2)).table(c);
  EXPECT_NE(t.find("stage 0"), std::string::npos) << t;
  EXPECT_NE(t.find("0-0 (dense_0)"), std::string::npos) << t;
  EXPECT_NE(t.find("cut 0|1: 1024 bytes"), std::string::npos) << t;
}

}  // namespace
}  // namespace trib::pipeline
