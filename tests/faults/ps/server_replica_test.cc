// strategy.ps_replicas: 1 with real processes: `kill -9` one of the two parameter servers of
// an asynchronous local cluster mid-run. Its shard's backup (on the other server) takes over:
// the job finishes with no rollback (no restore, no step redone), every push is applied once
// on each shard, and its accuracy is within 1 point of a fault-free run with backups.
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

TEST(PsServerReplica, AKilledServersBackupTakesOverWithNoRollbackAndNoLostUpdate) {
  fs::path clean_out = testing::fresh_path("faults", "ps_replica_clean");
  TribRun clean = run_trib(job(clean_out), std::chrono::seconds(240));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const double fault_free = final_accuracy(clean.output);
  EXPECT_EQ(updates(clean.output, 0), updates(clean.output, 1)) << clean.output;

  fs::path out = testing::fresh_path("faults", "ps_replica");
  std::string pid;
  bool killed = false;
  TribRun r = run_trib(job(out), std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("ps1 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (!killed && !pid.empty() && std::regex_search(line, std::regex("^\\[worker0\\] +100 +"))) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = true;
    }
  });
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Each worker says its requests for shard 1 went to the backup; the backup says it took over.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker 0: parameter server 1 lost \\(.*\\); its backup takes "
                                                     "over, no rollback")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 1's backup: .* taking over the shard with no rollback")))
      << r.output;
  // No rollback: no restore, no step redone.
  EXPECT_EQ(r.output.find("parameter server restore"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("steps redone"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("back to step"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("the job rolls back"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps1 \\(pid [0-9]+\\) was killed by signal 9.*; relaunching \\(1 of 3\\); "
                                                     "its shard.s backup takes over, nothing rolls back")))
      << r.output;
  // Every worker pushes each step to both shards: shard 1's acting server (its backup) holds
  // every push exactly once, as shard 0 does.
  const long u0 = updates(r.output, 0);
  EXPECT_GT(u0, 0);
  EXPECT_EQ(updates(r.output, 1), u0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 1: [^\n]*1 takeover"))) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), fault_free, 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

TEST(PsServerReplica, LosingTheServerThatHandsOutTheDataLosesNoBatchAndReadsNoneTwice) {
  // data.assignment: dynamic: server 0 hands out the chunks. Its backup holds the dispenser
  // too, and a worker's pushes and claims reach the backup on one connection (regression: on
  // two, the backup took each switch for a relaunch and handed the worker's chunk to others).
  fs::path out = testing::fresh_path("faults", "ps_replica_dynamic");
  std::vector<std::string> args = job(out);
  args.insert(args.end(), {"--set", "data.assignment=dynamic"});
  std::string pid;
  bool killed = false;
  TribRun r = run_trib(args, std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("ps0 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (!killed && !pid.empty() && std::regex_search(line, std::regex("^\\[worker0\\] +100 +"))) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = true;
    }
  });
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 0's backup: .* taking over the shard with no rollback")))
      << r.output;
  EXPECT_EQ(r.output.find("of its data unread"), std::string::npos) << "no worker was taken for a relaunch\n"
                                                                     << r.output;
  // Every batch of the job applied once: as many as it has, none handed back.
  std::smatch data;
  ASSERT_TRUE(std::regex_search(r.output, data, std::regex("data: ([0-9]+) of ([0-9]+) batches applied, ([0-9]+) "
                                                           "handed back")))
      << r.output;
  EXPECT_EQ(data[1], data[2]) << r.output;
  EXPECT_EQ(data[3], "0") << r.output;
  EXPECT_EQ(updates(r.output, 0), std::stol(data[2])) << "one push per batch, each applied once\n" << r.output;
  EXPECT_EQ(updates(r.output, 1), updates(r.output, 0)) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
