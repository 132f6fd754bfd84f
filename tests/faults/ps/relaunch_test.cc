// RELIABILITY.md row 1 with real processes: `kill -9` a worker of an asynchronous
// parameter-server local cluster mid-run. The launcher relaunches it, it rejoins with its
// index at the servers' step and with their values (checked by checksum against what the
// server sent), the job finishes, and its accuracy is within 1 point of a fault-free run.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::TribRun;

const std::string kPs = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

// Short: two workers, 4 epochs of a 24,000-example subset (375 steps each). Worker 1 is killed
// when the chief reports its first epoch: a point in the run, not a time (progress lines come
// every 5 s, which a fast machine may not reach).
std::vector<std::string> job(const fs::path& out) {
  return {"train", kPs, "--output", out.string(), "--set", "threads.intra=1", "--set", "training.train_metrics=false",
          "--set", "data.train_subset=24000", "--set", "training.epochs=4"};
}

double final_accuracy(const std::string& output) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(output, m, std::regex("done: test accuracy ([0-9.]+)"))) << output;
  return m.empty() ? 0 : std::stod(m[1]);
}

TEST(PsRelaunch, AKilledAsyncWorkerIsRelaunchedRejoinsWithTheServersValuesAndTheJobFinishes) {
  fs::path clean_out = testing::fresh_path("faults", "relaunch_clean");
  TribRun clean = run_trib(job(clean_out), std::chrono::seconds(120));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const double fault_free = final_accuracy(clean.output);

  fs::path out = testing::fresh_path("faults", "relaunch");
  std::string pid;
  bool killed = false;
  TribRun r = run_trib(job(out), std::chrono::seconds(120), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("worker1 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (!killed && !pid.empty() && std::regex_search(line, std::regex("^\\[worker0\\] +[0-9]+ +1\\.00 "))) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = true;
    }
  });
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker1 \\(pid [0-9]+\\) was killed by signal 9.*; relaunching \\(1 of 3\\)")))
      << r.output;
  // The relaunched worker's variables at its first step equal the servers' values.
  std::smatch worker, server;
  ASSERT_TRUE(std::regex_search(r.output, worker,
                                std::regex("\\[worker1\\] worker 1: starts at step ([0-9]+) with the servers' values \\(ps 0 crc32c ([0-9a-f]{8})\\)")))
      << r.output;
  ASSERT_TRUE(std::regex_search(r.output, server,
                                std::regex("\\[ps0\\] ps 0: worker 1 rejoined at step ([0-9]+); values crc32c ([0-9a-f]{8})")))
      << r.output;
  EXPECT_EQ(worker[1], server[1]) << "the step the server says the worker resumes at";
  EXPECT_EQ(worker[2], server[2]) << "the values the worker starts from are the ones the server sent";
  EXPECT_GT(std::stoi(worker[1].str()), 0) << "the current step, not a fresh start";
  EXPECT_NE(r.output.find("[worker1] worker 1: rejoins at step"), std::string::npos)
      << "its data resumes at the cursor of its last applied push\n" << r.output;
  EXPECT_NEAR(final_accuracy(r.output), fault_free, 0.01) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

}  // namespace
}  // namespace trib
