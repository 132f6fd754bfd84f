// The end of a pipeline run: a stage that has finished its last step leaves, and its links
// close. Before the chief (stage 0) has the final checkpoint's every shard, that close looked
// like a lost stage: the chief, watching its neighbours while it gathered the shards, dropped
// the run's last step and waited for a relaunch that never came, then failed (once in ~25
// runs of the e2e relaunch test, when the last stage's shard came after stage 1 had left).
// Here the last stage's final shard is held back, so that stage 1 would always leave first.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "integration/pipeline/stage_threads.h"
#include "trib/checkpoint/checkpoint.h"
#include "trib/config/job_config.h"
#include "trib/pipeline/stage_trainer.h"
#include "unit/checkpoint/temp_dir.h"

namespace trib::pipeline {
namespace {

constexpr int kStages = 3, kSteps = 4;

const char* kJob = R"(name: run_end
model:
  input: [1, 28, 28]
  classes: 10
  layers:
    - {type: flatten, stage: 0}
    - {type: dense, units: 16, activation: relu, stage: 1}
    - {type: dense, units: 10, stage: 2}
data:
  format: idx
  train:
    images: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz
  test:
    images: /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
  train_subset: 256
  test_subset: 64
optimizer: {name: sgd, lr: 0.05}
training: {steps: 4, batch: 16, eval_every: 2, checkpoint_every: 2, train_metrics: false}
threads: {intra: 1, inter: 1}
strategy: {name: pipeline, stages: 3, micro_batches: 2}
cluster: {}
)";

struct Store {
  std::mutex mu;
  std::map<std::string, std::string> kv;
};

class PipelineRunEnd : public trib::testing::TempDirTest {};

TEST_F(PipelineRunEnd, AStageThatHasFinishedIsNotTakenForALostOne) {
  const config::JobConfig job = config::parse_job_config(kJob, "run_end.yaml");
  Store store;
  auto hub = std::make_shared<net::InProcHub>();
  std::vector<StageSummary> summaries(kStages);
  std::vector<std::string> errors(kStages);
  std::vector<std::thread> threads;
  for (int s = 0; s < kStages; ++s) {
    StageTrainerOptions o;
    o.job = job;
    o.output = dir();
    o.stage = s;
    o.transport = testing::inproc(hub, s);
    o.listen = "stage:0";
    // Short, so that the failure this guards against (a wait for a relaunch) ends the test
    // soon; long enough for these few steps on a loaded machine.
    o.timeout = std::chrono::seconds(20);
    o.log = stderr;
    o.lookup = [&store](const std::string& k) -> std::optional<std::string> {
      std::lock_guard lock(store.mu);
      auto it = store.kv.find(k);
      if (it == store.kv.end()) return std::nullopt;
      return it->second;
    };
    o.publish = [&store, s](const std::string& k, const std::string& v) {
      // The last stage's final shard comes late: stage 1 has finished by then.
      if (s == kStages - 1 && k.starts_with("pipeline/ckpt/") && k.find(fmt::format("/{}/", kSteps)) != std::string::npos)
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      std::lock_guard lock(store.mu);
      store.kv[k] = v;
    };
    threads.emplace_back([o = std::move(o), s, &summaries, &errors] {
      try {
        summaries[static_cast<std::size_t>(s)] = train_stage(o);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(s)] = e.what();
      }
    });
  }
  testing::within(120, [&] {
    for (auto& t : threads) t.join();
    return 0;
  });
  for (int s = 0; s < kStages; ++s) {
    EXPECT_EQ(errors[static_cast<std::size_t>(s)], "") << "stage " << s;
    EXPECT_EQ(summaries[static_cast<std::size_t>(s)].steps, kSteps) << "stage " << s;
  }
  // The final checkpoint is complete: the manifest names every stage's shard.
  std::optional<ValidCheckpoint> newest = load_latest_valid(dir() / "checkpoints");
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->checkpoint.step(), kSteps);
}

}  // namespace
}  // namespace trib::pipeline
