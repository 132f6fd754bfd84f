// Local clusters as a user runs them: `trib train` with a cluster section starts a
// coordinator, parameter servers and workers as processes on loopback.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::newest_checkpoint;
using testing::run_trib;
using testing::TribRun;
using testing::final_accuracy;

const std::string kPs = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

fs::path fresh_dir(const std::string& name) { return testing::fresh_path("cluster", name); }
const std::vector<std::string> kQuick = {"--set", "threads.intra=1", "--set", "training.train_metrics=false"};

std::vector<std::string> args(std::vector<std::string> a) {
  a.insert(a.end(), kQuick.begin(), kQuick.end());
  return a;
}

TEST(LocalCluster, AsyncTrainsToAccuracyAndTearsDownCleanly) {
  fs::path out = fresh_dir("async");
  TribRun r = run_trib(args({"train", kPs, "--output", out.string(), "--set", "training.epochs=8"}), std::chrono::seconds(240));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A log line, with its process, timestamp and level.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\[ps0\] \d{4}-\d\d-\d\dT[0-9:.]+Z info \[trib\] ps 0 serving)")))
      << r.output;
  EXPECT_NE(r.output.find("[worker1] step"), std::string::npos) << "merged logs with a role prefix";
  EXPECT_NE(r.output.find("max/mean load"), std::string::npos) << "the placement table";
  EXPECT_NE(r.output.find("staleness histogram"), std::string::npos);
  EXPECT_NE(r.output.find("every process finished"), std::string::npos);
  EXPECT_GE(final_accuracy(r.output), 0.88);
  fs::remove_all(out);
}

TEST(LocalCluster, BoundedStalenessTrainsToAccuracy) {
  fs::path out = fresh_dir("bounded");
  TribRun r = run_trib(args({"train", kPs, "--output", out.string(), "--set", "training.epochs=8", "--set",
                    "strategy.mode=bounded", "--set", "strategy.staleness=2", "--set", "cluster.ps=2", "--set",
                    "strategy.placement=partitioned", "--set", "strategy.partition_bytes=65536"}),
              std::chrono::seconds(240));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(final_accuracy(r.output), 0.88);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("max clock gap ([0-9]+)"))) << r.output;
  EXPECT_LE(std::stoi(m[1]), 2);
  // Sharded checkpoint: each server wrote its own shard.
  bool ps0 = false, ps1 = false;
  for (auto& e : fs::recursive_directory_iterator(out / "checkpoints")) {
    ps0 |= e.path().filename() == "ps-0.safetensors";
    ps1 |= e.path().filename() == "ps-1.safetensors";
  }
  EXPECT_TRUE(ps0 && ps1) << "every server writes its own checkpoint shard";
  fs::remove_all(out);
}

// The chief (worker 0) initializes the servers and writes the run's checkpoints and report:
// the job cannot go on without it.
TEST(LocalCluster, AKilledChiefStopsTheJobNamingIt) {
  fs::path out = fresh_dir("killed");
  bool killed = false;
  // With no restarts allowed (a relaunched worker is tests/faults/ps/relaunch_test.cc).
  TribRun r = run_trib(args({"train", kPs, "--output", out.string(), "--set", "cluster.max_restarts=0"}),
              std::chrono::seconds(120), [&](const std::string& line, testing::Trib&) {
                std::smatch m;
                static std::string pid;
                if (std::regex_search(line, m, std::regex("worker0 \\(pid ([0-9]+)\\)"))) pid = m[1];
                if (!killed && !pid.empty() && line.find("[worker0] step") != std::string::npos) {
                  ::kill(std::stoi(pid), SIGKILL);
                  killed = true;
                }
              });
  ASSERT_TRUE(killed) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("worker0"), std::string::npos);
  EXPECT_NE(r.output.find("was killed by signal 9"), std::string::npos) << r.output;
  fs::remove_all(out);
}

// RELIABILITY.md row 1, first half: an asynchronous job goes on without a killed worker
// (other than the chief), and finishes cleanly.
TEST(LocalCluster, AKilledWorkerIsEvictedAndTheAsyncJobGoesOn) {
  fs::path out = fresh_dir("killed_worker");
  bool killed = false;
  std::string pid;
  // No relaunch (cluster.max_restarts 0): the job goes on with one worker. The relaunch is
  // tests/faults/ps/relaunch_test.cc.
  TribRun r = run_trib(args({"train", kPs, "--output", out.string(), "--set", "training.epochs=2", "--set",
                             "cluster.max_restarts=0"}),
                       std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
                         std::smatch m;
                         if (std::regex_search(line, m, std::regex("worker1 \\(pid ([0-9]+)\\)"))) pid = m[1];
                         if (!killed && !pid.empty() && line.find("[worker1] step") != std::string::npos) {
                           ::kill(std::stoi(pid), SIGKILL);
                           killed = true;
                         }
                       });
  ASSERT_TRUE(killed) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker1 (pid " + pid + ") was killed by signal 9"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("it was evicted, and the job goes on without it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("done: test accuracy"), std::string::npos) << "the chief finished the run";
  fs::remove_all(out);
}

TEST(LocalCluster, AJobKilledMidTrainingResumesFromItsCheckpoint) {
  fs::path out = fresh_dir("resume");
  bool killed = false;
  TribRun first = run_trib(args({"train", kPs, "--output", out.string(), "--set", "training.checkpoint_every=40"}),
                  std::chrono::seconds(120), [&](const std::string&, testing::Trib& p) {
                    if (!killed && newest_checkpoint(out) >= 80) {
                      p.signal(SIGKILL);  // the launcher; its children follow it
                      killed = true;
                    }
                  });
  ASSERT_TRUE(killed) << first.output;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  TribRun second = run_trib(args({"train", kPs, "--resume", out.string(), "--set", "training.epochs=1"}), std::chrono::seconds(120));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(second.output, m, std::regex("at step ([0-9]+)"))) << second.output;
  EXPECT_GE(std::stoi(m[1]), 80);
  fs::remove_all(out);
}

// Workers of a local cluster share the machine: left to choose, each takes its part of the
// cores rather than all of them.
TEST(LocalCluster, WorkersLeftToChooseSplitTheCores) {
  fs::path out = fresh_dir("threads");
  TribRun r = run_trib({"train", kPs, "--output", out.string(), "--set", "threads.intra=0", "--set",
                        "training.steps=5", "--set", "data.train_subset=2000", "--set", "data.test_subset=100"},
                       std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_NE(r.output.find(fmt::format("2 worker(s) share {} core(s): threads.intra={} each", cores,
                                      std::max(1, cores / 2))),
            std::string::npos)
      << r.output;
  fs::remove_all(out);
}

// Synchronous workers are deterministic (the server adds two gradients, which commutes), so
// a job killed after a mid-epoch checkpoint and resumed must end exactly as one that ran
// through: the same variables, and every worker continuing its own shard where it stood.
TEST(LocalCluster, ASyncJobResumedMidEpochEndsAsIfUninterrupted) {
  const std::vector<std::string> job = {"--set", "strategy.mode=sync", "--set", "data.train_subset=6000", "--set",
                                        "data.test_subset=1000", "--set", "training.steps=400", "--set",
                                        "training.batch=32", "--set", "training.checkpoint_every=30"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), job.begin(), job.end());
    return args(a);
  };
  auto final_line = [](const std::string& output) {
    std::smatch m;
    return std::regex_search(output, m, std::regex("done: test accuracy [0-9.]+, test loss [0-9.]+")) ? m[0].str()
                                                                                                        : std::string();
  };
  fs::path through = fresh_dir("sync_through"), resumed = fresh_dir("sync_resumed");
  TribRun whole = run_trib(with({"train", kPs, "--output", through.string()}), std::chrono::seconds(180));
  ASSERT_EQ(whole.exit_code, 0) << whole.output;

  bool killed = false;
  run_trib(with({"train", kPs, "--output", resumed.string()}), std::chrono::seconds(180),
           [&](const std::string&, testing::Trib& p) {
             if (!killed && newest_checkpoint(resumed) >= 60) {
               p.signal(SIGKILL);
               killed = true;
             }
           });
  ASSERT_TRUE(killed);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int checkpoint = newest_checkpoint(resumed);
  ASSERT_LT(checkpoint, 400) << "the kill came after the last checkpoint";
  ASSERT_NE(checkpoint % (6000 / 2 / 32), 0) << "a checkpoint at an epoch boundary would not test a mid-epoch resume";
  TribRun second = run_trib(with({"train", kPs, "--resume", resumed.string()}), std::chrono::seconds(180));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find(fmt::format("at step {}", checkpoint)), std::string::npos) << second.output;
  EXPECT_FALSE(final_line(whole.output).empty()) << whole.output;
  EXPECT_EQ(final_line(second.output), final_line(whole.output)) << second.output;
  fs::remove_all(through);
  fs::remove_all(resumed);
}

}  // namespace
}  // namespace trib
