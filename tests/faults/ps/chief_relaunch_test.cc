// A lost chief relaunched in place (issue 12): `kill -9` worker 0 of a parameter-server local
// cluster mid-run, every server alive. The launcher relaunches it, and the new process rejoins
// the running job as a relaunched worker does: the servers' values and optimizer state, its
// step and data cursor from them (its parameters at its first step are the servers', by
// checksum). No server reloads anything and no worker rewinds. It takes its chief's duties up
// again in the same run directory: evaluations and checkpoints at the same steps, to the last
// one, the report, and an accuracy within 1 point of a fault-free run. Asynchronous and
// synchronous servers, and servers with hot backups (strategy.ps_replicas: 1).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "e2e/run_output.h"
#include "e2e/trib_process.h"
#include "faults/ps/replica_job.h"
#include "faults/ps/restore_job.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::final_accuracy;
using testing::run_trib;
using testing::TribRun;

int count(const std::string& text, const std::regex& re) {
  return static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// Runs `args`, killing worker 0 with SIGKILL at the chief's evaluation row of step `at`.
TribRun run_killing_chief(const std::vector<std::string>& args, int at, std::string& killed) {
  std::string pid;
  killed.clear();
  return run_trib(args, std::chrono::seconds(300), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("worker0 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (killed.empty() && !pid.empty() && std::regex_search(line, std::regex(fmt::format("^\\[worker0\\] +{} +", at)))) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = pid;
    }
  });
}

// What every in-place rejoin shows, for a run of `servers` servers killed at the chief's row of
// step `at`, with checkpoints every `every` steps to the last step `last`. Returns the step the
// new chief rejoined at.
int check_rejoined_in_place(const TribRun& r, const fs::path& out, const std::string& killed, int servers, int at,
                            int every, int last) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Relaunched once, with the launcher saying what the new chief does; the job never restarted whole.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker0 \\(pid " + killed + "\\) was killed by signal 9.*; "
                                                     "relaunching \\(1 of 3\\); it rejoins the running job in place")))
      << r.output;
  EXPECT_EQ(r.output.find("relaunching (2 of 3)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not relaunched in place"), std::string::npos) << r.output;
  // No restore, no rewind, no rollback on any server, nothing redone.
  EXPECT_EQ(r.output.find("parameter server restore"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("back to step"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rollback(s)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("cannot rejoin the running job in place"), std::string::npos) << r.output;

  // The new chief takes the run back at the servers' current step (past the kill), not at its checkpoint.
  std::smatch back;
  EXPECT_TRUE(std::regex_search(r.output, back,
                                std::regex("\\[worker0\\] worker 0: relaunched in place of the lost chief; takes the run "
                                           "back at step ([0-9]+) \\(the servers' state; newest checkpoint "
                                           "\\S+ckpt-([0-9]+)\\)")))
      << r.output;
  if (back.empty()) return -1;
  const int step = std::stoi(back[1]);
  EXPECT_GE(step, at);
  EXPECT_LE(std::stoi(back[2]), step);
  // Its parameters at its first step are the servers' (crc32c on both sides, per server).
  std::smatch worker;
  EXPECT_TRUE(std::regex_search(r.output, worker,
                                std::regex("\\[worker0\\] worker 0: starts at step ([0-9]+) with the servers' values "
                                           "\\(([^)]*)\\)")))
      << r.output;
  if (!worker.empty()) {
    EXPECT_EQ(std::stoi(worker[1]), step);
    const std::string sums = worker[2];
    for (int p = 0; p < servers; ++p) {
      std::smatch mine, theirs;
      EXPECT_TRUE(std::regex_search(sums, mine, std::regex(fmt::format("ps {} crc32c ([0-9a-f]{{8}})", p)))) << sums;
      // Said by whichever process serves shard p then. The chief starts at the step the
      // slowest server gives it (sync: a round may have closed on one server before the other).
      EXPECT_TRUE(std::regex_search(
          r.output, theirs,
          std::regex(fmt::format("ps {}: worker 0 rejoined at step ([0-9]+); values crc32c ([0-9a-f]{{8}})", p))))
          << r.output;
      if (!mine.empty() && !theirs.empty()) {
        EXPECT_GE(std::stoi(theirs[1]), step);
        EXPECT_EQ(mine[1], theirs[2]) << "shard " << p;
      }
    }
  }
  // The chief's duties go on from there in the same run directory: each evaluation after the
  // rejoin at the same steps, the last checkpoint at the last step, the report.
  EXPECT_EQ(testing::newest_checkpoint(out), last) << r.output;
  const std::vector<int> rows = testing::test_rows(out);
  EXPECT_FALSE(rows.empty());
  if (!rows.empty()) {
    EXPECT_EQ(rows.back(), last);
  }
  const int next = (step / every + 1) * every;
  if (next < last) {
    EXPECT_NE(std::find(rows.begin(), rows.end(), next), rows.end()) << "the new chief's first evaluation";
  }
  EXPECT_NE(r.output.find("parameter servers:"), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, std::regex("done: test accuracy")), 1) << r.output;
  return step;
}

TEST(PsChiefRelaunch, AKilledAsyncChiefRejoinsTheRunningJobInPlaceWithNoRollback) {
  const fs::path clean_out = testing::fresh_path("faults", "chief_relaunch_clean");
  const TribRun clean = run_trib(testing::restore_job(clean_out), std::chrono::seconds(180));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;

  const fs::path out = testing::fresh_path("faults", "chief_relaunch");
  std::string killed;
  const TribRun r = run_killing_chief(testing::restore_job(out), 60, killed);
  ASSERT_FALSE(killed.empty()) << r.output;
  check_rejoined_in_place(r, out, killed, 2, 60, 20, 496);
  // Every step of the 3 workers applied exactly once on each server: nothing was redone, and a
  // step the chief died between its two pushes of is acknowledged only, not applied again, by
  // the server that had it (its data cursor covers the replay's).
  EXPECT_EQ(testing::replica_job::updates(r.output, 0), 3 * 496) << r.output;
  EXPECT_EQ(testing::replica_job::updates(r.output, 1), 3 * 496) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), final_accuracy(clean.output), 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

// Sync: the round in progress closes without the chief, the next ones expect the others only
// until it is back, then it again. Every round is applied once on each server (496 rounds).
TEST(PsChiefRelaunch, AKilledSyncChiefRejoinsTheRunningRoundsInPlace) {
  std::vector<std::string> args = testing::restore_job(testing::fresh_path("faults", "chief_relaunch_sync_clean"));
  const fs::path clean_out = args[3];
  args.insert(args.end(), {"--set", "strategy.mode=sync"});
  const TribRun clean = run_trib(args, std::chrono::seconds(240));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;

  const fs::path out = testing::fresh_path("faults", "chief_relaunch_sync");
  args[3] = out.string();
  std::string killed;
  const TribRun r = run_killing_chief(args, 60, killed);
  ASSERT_FALSE(killed.empty()) << r.output;
  check_rejoined_in_place(r, out, killed, 2, 60, 20, 496);
  EXPECT_EQ(count(r.output, std::regex("ps [01]: [0-9.]+ MB in, [0-9.]+ MB out, [0-9]+ requests, 496 updates")), 2)
      << r.output;
  EXPECT_EQ(count(r.output, std::regex("1 worker\\(s\\) lost, 1 re-admitted")), 2) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), final_accuracy(clean.output), 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

// Hot backups: nothing is taken over (every server is alive), and each push is applied once on
// each shard.
TEST(PsChiefRelaunch, AKilledChiefWithHotBackupsRejoinsInPlace) {
  using namespace testing::replica_job;
  const fs::path out = testing::fresh_path("faults", "chief_relaunch_replicas");
  std::string killed;
  const TribRun r = run_killing_chief(job(out), 100, killed);
  ASSERT_FALSE(killed.empty()) << r.output;
  check_rejoined_in_place(r, out, killed, 2, 100, 50, 62 * 4);
  EXPECT_EQ(r.output.find("taking over the shard"), std::string::npos) << r.output;
  // Every step of both workers, exactly once: the chief resumes where the slower shard saw it,
  // and the step it died between its two pushes of is only acknowledged by the other shard.
  EXPECT_EQ(updates(r.output, 0), pushes_per_shard(4)) << r.output;
  EXPECT_EQ(updates(r.output, 1), pushes_per_shard(4)) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), fault_free_accuracy(), 0.01)) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
