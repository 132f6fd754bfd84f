// RELIABILITY.md row 5, for real: a worker of an asynchronous parameter-server job is frozen
// (SIGSTOP) past the heartbeat timeout. The coordinator evicts it (a new generation) and the
// job goes on without it; when it is thawed (SIGCONT) it learns it is no longer a member and
// exits, and the job still finishes cleanly.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kPs = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

TEST(StalledWorker, AFrozenWorkerIsEvictedTheJobGoesOnAndTheThawedProcessExits) {
  fs::path out = testing::fresh_path("cluster", "stalled_worker");
  std::string pid;
  Clock::time_point stopped{};
  bool thawed = false;
  int steps_while_stopped = 0;
  testing::TribRun r = testing::run_trib(
      {"train", kPs, "--output", out.string(), "--set", "cluster.workers=3", "--set", "cluster.heartbeat_ms=500",
       "--set", "cluster.peer_timeout_ms=3000", "--set", "training.epochs=2", "--set", "data.train_subset=12000",
       "--set", "data.test_subset=2000", "--set", "threads.intra=1", "--set", "training.train_metrics=false"},
      std::chrono::seconds(300), [&](const std::string& line, testing::Trib&) {
        std::smatch m;
        if (pid.empty() && std::regex_search(line, m, std::regex("worker2 \\(pid ([0-9]+)\\)"))) pid = m[1];
        if (stopped == Clock::time_point{} && !pid.empty() && line.find("[worker2] step") != std::string::npos) {
          ::kill(std::stoi(pid), SIGSTOP);
          stopped = Clock::now();
        }
        if (stopped != Clock::time_point{} && !thawed && line.find("[worker1] step") != std::string::npos)
          ++steps_while_stopped;
        // Well past the heartbeat timeout (3 s; generous, as test machines are loaded), and once the others were seen training meanwhile.
        if (stopped != Clock::time_point{} && !thawed && Clock::now() - stopped > std::chrono::seconds(8) &&
            steps_while_stopped > 0) {
          ::kill(std::stoi(pid), SIGCONT);
          thawed = true;
        }
      });
  ASSERT_FALSE(pid.empty()) << r.output;
  ASSERT_TRUE(thawed) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("it was evicted, and the job goes on without it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("done: test accuracy"), std::string::npos) << "the chief finished the run";
  EXPECT_NE(r.output.find("every process finished"), std::string::npos) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
