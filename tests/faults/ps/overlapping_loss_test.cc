// Overlapping losses with real processes: `kill -9` of worker 1 and of server 1 in the same
// instant, in an async local cluster (`trib train`, 2 servers, 2 workers), the launcher
// relaunching both. Without backups (ps_replicas 0) the chief restores the job from its newest
// checkpoint while the relaunched worker joins (it waits for the restore at its first read);
// with them (ps_replicas 1) server 1's backup takes over and the relaunched worker starts at
// the servers' values. Either way the job finishes, within 1 point of a fault-free run.
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

// Runs the replica job with `replicas`, killing worker 1 and server 1 together once the chief
// reports step 100 (checkpoints at 50 and 100 are written by then, or being written).
TribRun run_with_two_losses(const fs::path& out, int replicas) {
  std::vector<std::string> args = job(out);
  args.insert(args.end(), {"--set", fmt::format("strategy.ps_replicas={}", replicas)});
  std::string ps1, worker1;
  bool killed = false;
  TribRun r = run_trib(args, std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (ps1.empty() && std::regex_search(line, m, std::regex("ps1 \\(pid ([0-9]+)\\)"))) ps1 = m[1];
    if (worker1.empty() && std::regex_search(line, m, std::regex("worker1 \\(pid ([0-9]+)\\)"))) worker1 = m[1];
    if (!killed && !ps1.empty() && !worker1.empty() && std::regex_search(line, std::regex("^\\[worker0\\] +100 +"))) {
      ::kill(std::stoi(worker1), SIGKILL);
      ::kill(std::stoi(ps1), SIGKILL);
      killed = true;
    }
  });
  EXPECT_TRUE(killed) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker1 \\(pid [0-9]+\\) was killed by signal 9.*; relaunching "
                                                     "\\(1 of 3\\)")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps1 \\(pid [0-9]+\\) was killed by signal 9.*; relaunching "
                                                     "\\(1 of 3\\)")))
      << r.output;
  return r;
}

TEST(PsOverlappingLosses, AWorkerAndAServerLostTogetherAreBothRecoveredByARestore) {
  fs::path out = testing::fresh_path("faults", "ps_overlap_restore");
  TribRun r = run_with_two_losses(out, 0);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The chief restored the job once, from a checkpoint of this run; the relaunched worker
  // started from the restored job (at the checkpoint's step or past it, as the servers saw it).
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker 0: parameter server restore: ps 1 lost; every server "
                                                     "reloaded checkpoint " + out.string() + "/checkpoints/ckpt-[0-9]+")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("parameter server restores: 1\n"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker 1: starts at step [0-9]+ with the servers' values")))
      << r.output;
  EXPECT_TRUE(r.output.find("done: test accuracy") != std::string::npos) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), fault_free_accuracy(), 0.01)) << r.output;
  fs::remove_all(out);
}

TEST(PsOverlappingLosses, AWorkerAndAServerLostTogetherCostNoRollbackWithBackups) {
  fs::path out = testing::fresh_path("faults", "ps_overlap_backup");
  TribRun r = run_with_two_losses(out, 1);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 1's backup: .* taking over the shard with no rollback")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker 1: starts at step [0-9]+ with the servers' values")))
      << r.output;
  EXPECT_EQ(r.output.find("parameter server restore"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("back to step"), std::string::npos) << r.output;
  // Every push applied once on each shard: both workers' every step, and at most one more on
  // one shard, for a worker killed between its pushes to the two servers (it resumes at the
  // lower of the servers' steps).
  const long u0 = updates(r.output, 0), u1 = updates(r.output, 1);
  EXPECT_GE(std::min(u0, u1), pushes_per_shard(4)) << r.output;
  EXPECT_LE(std::max(u0, u1), pushes_per_shard(4) + 1) << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), fault_free_accuracy(), 0.01)) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
