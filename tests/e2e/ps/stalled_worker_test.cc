// RELIABILITY.md row 5, for real: a worker of an asynchronous parameter-server job is frozen
// (SIGSTOP) past the heartbeat timeout. The coordinator evicts it (a new generation) and the
// job goes on without it; when it is thawed (SIGCONT) it is told it is no longer a member and
// rejoins as a new member (it starts itself again, same pid, a new incarnation): it resumes
// with the servers' values (checksum) and trains, and nothing it sent in its old incarnation is
// applied: under data.assignment: dynamic every batch the servers count as applied is one
// update. The job is then stopped (SIGTERM: a checkpoint, exit 0).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

const std::string kPs = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

TEST(StalledWorker, AFrozenWorkerIsEvictedTheJobGoesOnAndTheThawedProcessRejoinsAsANewMember) {
  fs::path out = testing::fresh_path("cluster", "stalled_worker");
  std::string pid;
  bool stopped = false, evicted = false, thawed = false, rejoined = false, terminated = false;
  int steps_while_stopped = 0;
  // Many epochs: the job runs until the new member has trained, then it is stopped.
  testing::TribRun r = testing::run_trib(
      {"train", kPs, "--output", out.string(), "--set", "cluster.workers=3", "--set", "cluster.heartbeat_ms=500",
       "--set", "cluster.peer_timeout_ms=3000", "--set", "training.epochs=400", "--set", "data.train_subset=12000",
       "--set", "data.test_subset=1000", "--set", "threads.intra=1", "--set", "training.train_metrics=false", "--set",
       "training.eval_every=1000000", "--set", "data.assignment=dynamic"},
      std::chrono::seconds(300), [&](const std::string& line, testing::Trib& p) {
        std::smatch m;
        if (pid.empty() && std::regex_search(line, m, std::regex("worker2 \\(pid ([0-9]+)\\)"))) pid = m[1];
        if (!stopped && !pid.empty() && line.starts_with("[worker2] step")) {
          ::kill(std::stoi(pid), SIGSTOP);
          stopped = true;
        }
        if (stopped && !thawed && line.starts_with("[worker1] step")) ++steps_while_stopped;
        if (stopped && line.find("no data from worker 2") != std::string::npos) evicted = true;
        // Once the coordinator evicted it (3 s without a heartbeat) and the others trained meanwhile.
        if (evicted && !thawed && steps_while_stopped > 0) {
          ::kill(std::stoi(pid), SIGCONT);
          thawed = true;
        }
        if (thawed && line.find("it rejoins the job as a new member") != std::string::npos) rejoined = true;
        // The new member applied a step: the job may stop.
        if (rejoined && !terminated && line.starts_with("[worker2] step")) {
          p.signal(SIGTERM);
          terminated = true;
        }
      });
  ASSERT_FALSE(pid.empty()) << r.output;
  ASSERT_TRUE(thawed) << r.output;
  ASSERT_TRUE(terminated) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Evicted while frozen (the coordinator's words), told so once thawed, and it rejoins as a new
  // member in the same process.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\[worker2\\] .*worker 2 \\(incarnation [0-9]+, last generation "
                                                     "seen [0-9]+\\) is no longer a member of the job: .*was evicted in "
                                                     "generation [0-9]+.*; it rejoins the job as a new member \\(1 of 3")))
      << r.output;
  EXPECT_EQ(r.output.find("it was evicted, and the job goes on without it"), std::string::npos)
      << "the process never ended\n" << r.output;
  EXPECT_EQ(r.output.find("worker2 (pid"), r.output.rfind("worker2 (pid")) << "no process was started for it\n"
                                                                            << r.output;
  // The new member starts from the servers' values, as the server sent them.
  std::smatch worker, server;
  ASSERT_TRUE(std::regex_search(
      r.output, worker,
      std::regex("\\[worker2\\] worker 2: starts at step ([0-9]+) with the servers' values \\(ps 0 crc32c ([0-9a-f]{8})\\)")))
      << r.output;
  ASSERT_TRUE(std::regex_search(r.output, server,
                                std::regex("\\[ps0\\] ps 0: worker 2 rejoined at step ([0-9]+); values crc32c ([0-9a-f]{8})")))
      << r.output;
  EXPECT_EQ(worker[1], server[1]);
  EXPECT_EQ(worker[2], server[2]) << "the values the new member starts from are the ones the server sent";
  // Nothing of its old incarnation applied, nothing twice: one update per batch applied.
  std::smatch report;
  ASSERT_TRUE(std::regex_search(r.output, report,
                                std::regex("ps 0: [^\n]* ([0-9]+) updates, [^\n]*data: ([0-9]+) of [0-9]+ batches applied")))
      << r.output;
  EXPECT_EQ(report[1], report[2]) << "one update per batch applied\n" << r.output;
  EXPECT_NE(r.output.find("every process finished"), std::string::npos) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
