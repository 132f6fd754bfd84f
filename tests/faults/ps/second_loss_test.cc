// A second loss of the same shard before the relaunched server holds its copy, with real
// processes (`trib train`, 2 servers, 2 async workers, strategy.ps_replicas: 1): `kill -9` of
// server 1 at the chief's step 50, whose backup on server 0 takes shard 1 over; the launcher
// relaunches server 1 as the new backup of both shards; server 0, serving both shards by then,
// is killed while the relaunched server's copy is still on its way. The window is a fraction
// of a second, so the test-only hook TRIB_TEST_FAULT=ps-copy-held:1 (src/app/fault_hooks.h)
// holds the relaunched server's first copy of each shard back and prints a line when it
// arrives, at which the test kills server 0. No copy of either shard is left: the job falls
// back to the automatic restore (every shard from the newest checkpoint, taken over by a
// backup with no copy, the whole job rolled back, the steps redone reported), says why, and
// finishes within 1 point of a fault-free run.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include <fmt/format.h>

#include "e2e/trib_process.h"
#include "replica_job.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::TribRun;
using testing::final_accuracy;

using namespace testing::replica_job;

constexpr int kSteps = 62 * 4;  // per worker: the job's 4 epochs
const std::map<std::string, std::string> kFault{{"TRIB_TEST_FAULT", "ps-copy-held:1"}};

TEST(PsSecondLoss, AShardLostAgainBeforeTheRelaunchedServerHoldsItsCopyFallsBackToTheRestore) {
  fs::path clean_out = testing::fresh_path("faults", "ps_second_loss_clean");
  TribRun clean = run_trib(job(clean_out), std::chrono::seconds(240));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;

  fs::path out = testing::fresh_path("faults", "ps_second_loss");
  std::string ps0, ps1;
  bool first = false, second = false;
  TribRun r = run_trib(job(out), std::chrono::seconds(300), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (ps0.empty() && std::regex_search(line, m, std::regex("ps0 \\(pid ([0-9]+)\\)"))) ps0 = m[1];
    if (ps1.empty() && std::regex_search(line, m, std::regex("ps1 \\(pid ([0-9]+)\\)"))) ps1 = m[1];
    if (!first && !ps1.empty() && std::regex_search(line, std::regex("^\\[worker0\\] +50 +"))) {
      ::kill(std::stoi(ps1), SIGKILL);
      first = true;
    }
    if (first && !second && !ps0.empty() && line.find("TRIB_TEST_FAULT: ps 1 holds back its copy of shard") != std::string::npos) {
      ::kill(std::stoi(ps0), SIGKILL);
      second = true;
    }
  }, kFault);
  ASSERT_TRUE(first && second) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps1 \\(pid " + ps1 + "\\) was killed by signal 9.*; relaunching \\(1 of 3\\)")))
      << r.output;
  // The servers' relaunches are counted together: this is their second.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps0 \\(pid " + ps0 + "\\) was killed by signal 9.*; relaunching \\(2 of 3\\)")))
      << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  // The first loss: taken over with no rollback.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 1's backup: .* taking over the shard with no rollback")))
      << r.output;
  // The second: no copy left, so the restore, saying why.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker [01]: parameter server [01] lost, and no backup of its shard "
                                                     "holds a copy \\(.*\\): the shard falls back to the automatic "
                                                     "restore from the newest checkpoint")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps [01]'s backup: holds no copy of the shard \\(its primary was lost "
                                                     "before the copy arrived\\); .* restores the shard here from the "
                                                     "newest checkpoint")))
      << r.output;
  // The chief's restore names both servers (each reconnected on one of its tries).
  std::smatch restore;
  ASSERT_TRUE(std::regex_search(r.output, restore,
                                std::regex("worker 0: parameter server restore: ps 0, ps 1 lost; every server reloaded checkpoint " +
                                           out.string() + "/checkpoints/ckpt-([0-9]+) \\(step [0-9]+\\)")))
      << r.output;
  EXPECT_GE(std::stoi(restore[1]), 50);
  EXPECT_TRUE(std::regex_search(r.output, std::regex("parameter server restores: 1\n"))) << r.output;
  // Both workers rewound to it; the steps redone are reported.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\[worker1\\] worker 1: parameter server restore \\(.* lost\\) from "
                                                     "\\S+ckpt-" + restore[1].str() + "; back to step")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("steps redone in all: [1-9][0-9]*"))) << r.output;
  EXPECT_TRUE(r.output.find("done: test accuracy") != std::string::npos) << r.output;
  EXPECT_EQ(testing::newest_checkpoint(out), kSteps) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), final_accuracy(clean.output), 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

}  // namespace
}  // namespace trib
