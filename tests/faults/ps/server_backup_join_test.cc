// strategy.ps_replicas: 1 with real processes, beyond the first loss (docs/fault_tolerance/
// parameter_servers.md, "Hot backups"): a relaunched server becomes the new backup of the
// shards that lost theirs, so losing the server that then serves both shards costs no step;
// and a server stopped (SIGSTOP) long enough for its backup to take over is fenced when it
// resumes: it applies and acknowledges nothing more, exits, and comes back as a backup.
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

// 8 epochs (496 steps a worker): room after the first fault for a relaunch, its copies and a
// second fault while training goes on.
constexpr int kEpochs = 8;

void expect_no_rollback(const std::string& output) {
  EXPECT_EQ(output.find("parameter server restore"), std::string::npos) << output;
  EXPECT_EQ(output.find("steps redone"), std::string::npos) << output;
  EXPECT_EQ(output.find("back to step"), std::string::npos) << output;
  EXPECT_EQ(output.find("the job rolls back"), std::string::npos) << output;
}

TEST(PsServerBackupJoin, ARelaunchedServerBecomesTheBackupAndASecondLossCostsNoStep) {
  fs::path clean_out = testing::fresh_path("faults", "ps_backup_join_clean");
  TribRun clean = run_trib(job(clean_out, kEpochs), std::chrono::seconds(240));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;

  fs::path out = testing::fresh_path("faults", "ps_backup_join");
  std::string pid0, pid1;
  bool first = false, second = false;
  bool copy0 = false, copy1 = false;
  TribRun r = run_trib(job(out, kEpochs), std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid0.empty() && std::regex_search(line, m, std::regex("ps0 \\(pid ([0-9]+)\\)"))) pid0 = m[1];
    if (pid1.empty() && std::regex_search(line, m, std::regex("ps1 \\(pid ([0-9]+)\\)"))) pid1 = m[1];
    if (!first && !pid1.empty() && std::regex_search(line, std::regex("^\\[worker0\\] +50 +"))) {
      ::kill(std::stoi(pid1), SIGKILL);
      first = true;
    }
    // The relaunched server 1 holds a copy of both shards: then server 0, which serves both
    // (its own, and shard 1 since its backup took it over), is lost in turn.
    if (first && std::regex_search(line, std::regex("^\\[ps1\\] ps 0's backup: holds a copy"))) copy0 = true;
    if (first && std::regex_search(line, std::regex("^\\[ps1\\] ps 1's backup: holds a copy"))) copy1 = true;
    if (!second && copy0 && copy1 && !pid0.empty()) {
      ::kill(std::stoi(pid0), SIGKILL);
      second = true;
    }
  });
  ASSERT_TRUE(second) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_no_rollback(r.output);
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 1 relaunched: its shard is served by the backup"))) << r.output;
  // After the second loss both shards are served by the relaunched server 1's backups.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\[ps1\\] ps 0's backup: .* taking over the shard with no "
                                                     "rollback \\(epoch 2\\)")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\[ps1\\] ps 1's backup: .* taking over the shard with no "
                                                     "rollback \\(epoch 2\\)")))
      << r.output;
  // Every push applied exactly once on each shard, across both losses.
  EXPECT_EQ(updates(clean.output, 0), pushes_per_shard(kEpochs)) << clean.output;
  EXPECT_EQ(updates(r.output, 0), pushes_per_shard(kEpochs)) << r.output;
  EXPECT_EQ(updates(r.output, 1), pushes_per_shard(kEpochs)) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), final_accuracy(clean.output), 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

TEST(PsServerBackupJoin, AStoppedServerIsFencedWhenItResumesAndComesBackAsABackup) {
  fs::path out = testing::fresh_path("faults", "ps_backup_fence");
  std::string pid1;
  bool stopped = false, resumed = false;
  TribRun r = run_trib(job(out, kEpochs), std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid1.empty() && std::regex_search(line, m, std::regex("ps1 \\(pid ([0-9]+)\\)"))) pid1 = m[1];
    if (!stopped && !pid1.empty() && std::regex_search(line, std::regex("^\\[worker0\\] +50 +"))) {
      ::kill(std::stoi(pid1), SIGSTOP);
      stopped = true;
    }
    // Alive but silent: the workers' connections time out and shard 1's backup takes over.
    if (stopped && !resumed && std::regex_search(line, std::regex("ps 1's backup: .* taking over the shard"))) {
      ::kill(std::stoi(pid1), SIGCONT);
      resumed = true;
    }
  });
  if (stopped && !resumed && !pid1.empty()) ::kill(std::stoi(pid1), SIGCONT);
  ASSERT_TRUE(resumed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_no_rollback(r.output);
  // The resumed server learns it was replaced (fenced by the shard's epoch, or no longer a
  // member), exits, and its relaunch holds the backups.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps1 \\(pid [0-9]+\\) exited with status (75|3); relaunching")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 1 relaunched: its shard is served by the backup"))) << r.output;
  // No update lost or applied twice: each shard holds every push once.
  EXPECT_EQ(updates(r.output, 0), pushes_per_shard(kEpochs)) << r.output;
  EXPECT_EQ(updates(r.output, 1), pushes_per_shard(kEpochs)) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
