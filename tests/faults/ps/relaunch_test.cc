// RELIABILITY.md row 1 with real processes: `kill -9` a worker of an asynchronous
// parameter-server local cluster mid-run. The launcher relaunches it, it rejoins with its
// index at the servers' step and with their values (checked by checksum against what the
// server sent), the job finishes, and its accuracy is within 1 point of a fault-free run.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::TribRun;
using testing::final_accuracy;

const std::string kPs = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

// Short: two workers, 4 epochs of a 24,000-example subset (372 steps each). Worker 1 is killed
// at its first progress line, printed once its step 1 is applied: a point in its own run, not
// a time (later progress lines come every 5 s, which a fast machine may never reach, and the
// workers' relative speed varies too much for the chief's reports to be a landmark).
std::vector<std::string> job(const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"train", kPs, "--output", out.string(), "--set", "threads.intra=1", "--set",
                                "training.train_metrics=false", "--set", "data.train_subset=24000", "--set",
                                "training.epochs=4"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Runs the job, killing worker 1 with SIGKILL at its first progress line (after step 1).
TribRun run_killing_worker1(const std::vector<std::string>& args, bool& killed) {
  std::string pid;
  return run_trib(args, std::chrono::seconds(120), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("worker1 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (!killed && !pid.empty() && line.starts_with("[worker1] step 1/")) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = true;
    }
  });
}

// The step worker 1 resumed at, after checking that the values it starts from are the ones
// server 0 sent it (crc32c logged on both sides).
int checked_rejoin(const std::string& output) {
  std::smatch worker, server;
  EXPECT_TRUE(std::regex_search(output, worker,
                                std::regex("\\[worker1\\] worker 1: starts at step ([0-9]+) with the servers' values \\(ps 0 crc32c ([0-9a-f]{8})\\)")))
      << output;
  EXPECT_TRUE(std::regex_search(output, server,
                                std::regex("\\[ps0\\] ps 0: worker 1 rejoined at step ([0-9]+); values crc32c ([0-9a-f]{8})")))
      << output;
  if (worker.empty() || server.empty()) return -1;
  EXPECT_EQ(worker[1], server[1]) << "the step the server says the worker resumes at";
  EXPECT_EQ(worker[2], server[2]) << "the values the worker starts from are the ones the server sent";
  return std::stoi(worker[1].str());
}

TEST(PsRelaunch, AKilledAsyncWorkerIsRelaunchedRejoinsWithTheServersValuesAndTheJobFinishes) {
  fs::path clean_out = testing::fresh_path("faults", "relaunch_clean");
  TribRun clean = run_trib(job(clean_out), std::chrono::seconds(120));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const double fault_free = final_accuracy(clean.output);

  fs::path out = testing::fresh_path("faults", "relaunch");
  bool killed = false;
  TribRun r = run_killing_worker1(job(out), killed);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker1 \\(pid [0-9]+\\) was killed by signal 9.*; relaunching \\(1 of 3\\)")))
      << r.output;
  EXPECT_GT(checked_rejoin(r.output), 0) << "the current step, not a fresh start";
  EXPECT_NE(r.output.find("[worker1] worker 1: rejoins at step"), std::string::npos)
      << "its data resumes at the cursor of its last applied push\n" << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), fault_free, 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

TEST(PsRelaunch, SyncRoundsGoOnWithoutAKilledWorkerAndCountItAgainOnceRelaunched) {
  fs::path out = testing::fresh_path("faults", "relaunch_sync");
  bool killed = false;
  TribRun r = run_killing_worker1(job(out, {"--set", "strategy.mode=sync", "--set", "cluster.workers=3"}), killed);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("relaunching (1 of 3)"), std::string::npos) << r.output;
  // 3 workers share 24,000 examples: 62 steps an epoch, 248 in 4. The relaunched worker joins
  // the current round (on a fast machine the others may have finished every round by then).
  const int rejoined = checked_rejoin(r.output);
  EXPECT_GT(rejoined, 0);
  EXPECT_LE(rejoined, 248);
  // Every round was applied: none waited forever for the lost worker, none was applied twice.
  EXPECT_NE(r.output.find("248 updates"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 worker(s) lost, 1 re-admitted"), std::string::npos) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
