// The rounds in which a pipeline's stages meet again after one is relaunched
// (pipeline/stage_recovery.h), over an in-memory store.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "unit/checkpoint/temp_dir.h"
#include "pipeline/stage_recovery.h"
#include "trib/core/error.h"

namespace trib::pipeline {
namespace {

struct Store {
  std::mutex mu;
  std::map<std::string, std::string> kv;
};

StageTrainerOptions stage(Store& store, int s, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  StageTrainerOptions o;
  o.stage = s;
  o.timeout = timeout;
  o.publish = [&store](const std::string& k, const std::string& v) {
    std::lock_guard lock(store.mu);
    store.kv[k] = v;
  };
  o.lookup = [&store](const std::string& k) -> std::optional<std::string> {
    std::lock_guard lock(store.mu);
    auto it = store.kv.find(k);
    if (it == store.kv.end()) return std::nullopt;
    return it->second;
  };
  return o;
}

TEST(PipelineRecovery, ASecondProcessOfAStageIsARelaunchAndOpensTheNextRound) {
  Store store;
  EXPECT_FALSE(mark_started(stage(store, 0)));
  EXPECT_FALSE(mark_started(stage(store, 1)));
  EXPECT_TRUE(mark_started(stage(store, 1)));  // stage 1's process again
  EXPECT_EQ(open_next_round(stage(store, 1)), 1);
  EXPECT_TRUE(mark_started(stage(store, 1)));
  EXPECT_EQ(open_next_round(stage(store, 1)), 2);
}

TEST(PipelineRecovery, ASurvivorWaitsForTheRelaunchedStagesRound) {
  Store store;
  std::thread relaunch([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    open_next_round(stage(store, 1));
  });
  EXPECT_EQ(await_next_round(stage(store, 0), 0, "stage 1 was lost"), 1);
  relaunch.join();
  EXPECT_EQ(await_next_round(stage(store, 2), 0, "stage 1 was lost"), 1);  // already open: at once
}

TEST(PipelineRecovery, WithoutARelaunchTheSurvivorFailsNamingTheLoss) {
  Store store;
  try {
    await_next_round(stage(store, 0, std::chrono::milliseconds(100)), 0, "pipeline stage 0: stage 1 was lost");
    FAIL() << "no round was opened";
  } catch (const Unavailable& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("pipeline stage 0: stage 1 was lost; no relaunched stage rejoined within "))
        << e.what();
  }
}

class PipelineRollback : public testing::TempDirTest {};

TEST_F(PipelineRollback, WithoutACheckpointEveryStageStartsOver) {
  Store store;
  EXPECT_FALSE(rollback_checkpoint(stage(store, 0), 1, dir() / "checkpoints").has_value());
  EXPECT_FALSE(rollback_checkpoint(stage(store, 2), 1, dir() / "checkpoints").has_value());
}

TEST_F(PipelineRollback, EveryStageTakesTheCheckpointStageZeroNames) {
  Store store;
  const auto root = dir() / "checkpoints";
  for (std::int64_t step : {50, 100}) {
    CheckpointWriter w(root, step);
    Tensor t = Tensor::empty(DType::f32, Shape{2});
    t.data<float>()[0] = static_cast<float>(step), t.data<float>()[1] = 0;
    w.add_shard("stage-0", {{"w", t}});
    w.publish();
  }
  std::optional<Checkpoint> later;
  std::thread other([&] { later = rollback_checkpoint(stage(store, 1), 3, root); });  // waits for stage 0
  std::optional<Checkpoint> chief = rollback_checkpoint(stage(store, 0), 3, root);
  other.join();
  ASSERT_TRUE(chief && later);
  EXPECT_EQ(chief->step(), 100);
  EXPECT_EQ(later->step(), 100);
  EXPECT_EQ(later->tensor("w").data<float>()[0], 100.0f);
}

}  // namespace
}  // namespace trib::pipeline
