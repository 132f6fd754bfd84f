// Preemption and crashes while checkpointing, with `trib train` as a process:
// - SIGTERM writes a checkpoint at the next step boundary and exits 0; --resume continues
//   from that step (RELIABILITY.md, issue 12 "preemption");
// - a process killed between a checkpoint's data and its manifest resumes from the previous
//   complete checkpoint, never the partial one (RELIABILITY.md row 4).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::newest_checkpoint;
using testing::run_trib;
using testing::TribRun;

const std::string kMlp = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml";
// 3 epochs of 40 steps, a checkpoint every 10 steps.
const std::vector<std::string> kSmall = {"--set", "data.train_subset=2000", "--set", "data.test_subset=500",
                                         "--set", "training.epochs=3",       "--set", "training.batch=50",
                                         "--set", "threads.intra=1",         "--set", "training.checkpoint_every=10",
                                         "--set", "training.eval_every=40",  "--set", "training.train_metrics=false"};

std::vector<std::string> with_small(std::vector<std::string> a) {
  a.insert(a.end(), kSmall.begin(), kSmall.end());
  return a;
}

int resumed_step(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("resumed from \\S+ at step ([0-9]+)")) ? std::stoi(m[1]) : -1;
}

std::string final_line(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("done: (test accuracy [0-9.]+, test loss [0-9.]+)")) ? m[1].str() : "";
}

TEST(Preemption, SigtermCheckpointsAtTheNextStepAndResumeEndsAsIfUninterrupted) {
  fs::path whole = testing::fresh_path("preempt", "whole"), out = testing::fresh_path("preempt", "stopped");
  TribRun reference = run_trib(with_small({"train", kMlp, "--output", whole.string()}), std::chrono::seconds(300));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  bool sent = false;
  TribRun first = run_trib(with_small({"train", kMlp, "--output", out.string()}), std::chrono::seconds(300),
                           [&](const std::string&, testing::Trib& p) {
                             if (!sent && newest_checkpoint(out) >= 10) {
                               p.signal(SIGTERM);
                               sent = true;
                             }
                           });
  ASSERT_TRUE(sent) << first.output;
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(first.output, m, std::regex("step ([0-9]+): SIGTERM \\(preemption\\): stopping here")))
      << first.output;
  const int stopped = std::stoi(m[1]);
  EXPECT_EQ(newest_checkpoint(out), stopped) << "the checkpoint is written where the run stopped";
  if (stopped >= 120) GTEST_SKIP() << "the run ended before SIGTERM arrived; nothing left to resume";

  TribRun second = run_trib(with_small({"train", kMlp, "--resume", out.string()}), std::chrono::seconds(300));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(resumed_step(second.output), stopped) << second.output;
  // One process, same seed: the resumed run ends exactly where the uninterrupted one did.
  EXPECT_FALSE(final_line(reference.output).empty()) << reference.output;
  EXPECT_EQ(final_line(second.output), final_line(reference.output)) << second.output;
  fs::remove_all(whole);
  fs::remove_all(out);
}

TEST(Preemption, SigintStillStopsAtOnce) {
  fs::path out = testing::fresh_path("preempt", "sigint");
  bool sent = false;
  TribRun r = run_trib(with_small({"train", kMlp, "--output", out.string()}), std::chrono::seconds(300),
                       [&](const std::string&, testing::Trib& p) {
                         if (!sent && newest_checkpoint(out) >= 10) {
                           p.signal(SIGINT);
                           sent = true;
                         }
                       });
  ASSERT_TRUE(sent) << r.output;
  if (r.exit_code == 0) GTEST_SKIP() << "the run ended before SIGINT arrived";
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.output;
  EXPECT_EQ(r.output.find("stopping here"), std::string::npos) << r.output;
  fs::remove_all(out);
}

// RELIABILITY.md row 4. The step-20 checkpoint's manifest.json.tmp is a FIFO made beforehand,
// so the writer blocks opening it with every shard already durable: the process is killed
// exactly between the data and the manifest. What it leaves is what a crash leaves: the
// shards and a torn manifest.json.tmp, no manifest.json.
TEST(CrashWhileCheckpointing, KilledBetweenDataAndManifestResumesFromThePreviousCheckpoint) {
  fs::path out = testing::fresh_path("preempt", "torn");
  const fs::path torn = out / "checkpoints" / "ckpt-20";
  bool killed = false;
  TribRun first = run_trib(with_small({"train", kMlp, "--output", out.string()}), std::chrono::seconds(300),
                           [&](const std::string&, testing::Trib& p) {
                             if (!fs::exists(torn / "manifest.json.tmp") && fs::exists(out / "checkpoints")) {
                               fs::create_directories(torn);
                               ASSERT_EQ(::mkfifo((torn / "manifest.json.tmp").c_str(), 0600), 0);
                             }
                             if (!killed && fs::exists(torn / "model.safetensors") && fs::exists(torn / "optimizer.safetensors")) {
                               p.signal(SIGKILL);
                               killed = true;
                             }
                           });
  ASSERT_TRUE(killed) << first.output;
  EXPECT_EQ(first.exit_code, 128 + SIGKILL);
  EXPECT_EQ(newest_checkpoint(out), 10);
  EXPECT_FALSE(fs::exists(torn / "manifest.json"));
  // A crash leaves a regular, half-written file where the FIFO was.
  fs::remove(torn / "manifest.json.tmp");
  std::ofstream(torn / "manifest.json.tmp") << R"({"format": "tributary-checkpoint", "step": 2)";

  // Every checkpoint kept, so that step 20's can be looked at after the run.
  TribRun second = run_trib(with_small({"train", kMlp, "--resume", out.string(), "--set", "training.keep_checkpoints=20"}),
                            std::chrono::seconds(300));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(resumed_step(second.output), 10) << "the partial step-20 checkpoint is never used:\n" << second.output;
  EXPECT_EQ(newest_checkpoint(out), 120);
  EXPECT_TRUE(fs::exists(torn / "manifest.json")) << "step 20 is written again, completely";
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
