// A parameter server lost during the final checkpoint's gather (the chief asks every server for
// its state once every worker is done), with real processes: `trib train` with 2 servers and 2
// async workers. A window of milliseconds, so server 1 kills itself there (kill -9) through the
// test-only hook TRIB_TEST_FAULT=ps-lost-at-final-gather:1 (src/app/fault_hooks.h), after
// answering the first part of its state. With a hot backup the checkpoint is gathered from it;
// without one the run ends with one line naming the newest checkpoint, which --resume continues.
#include <gtest/gtest.h>

#include <regex>

#include <fmt/format.h>

#include "e2e/trib_process.h"
#include "replica_job.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::TribRun;

using namespace testing::replica_job;

constexpr int kEpochs = 2;
constexpr int kSteps = 62 * kEpochs;  // per worker; checkpoints at 50 and 100, the final one at 124
const std::map<std::string, std::string> kFault{{"TRIB_TEST_FAULT", "ps-lost-at-final-gather:1"}};

std::vector<std::string> job_with(const fs::path& out, int replicas) {
  std::vector<std::string> args = job(out, kEpochs);
  args.insert(args.end(), {"--set", fmt::format("strategy.ps_replicas={}", replicas)});
  return args;
}

TEST(PsFinalGather, AServerLostAtTheFinalGatherIsSavedFromItsBackup) {
  fs::path out = testing::fresh_path("faults", "ps_final_gather_backup");
  TribRun r = run_trib(job_with(out, 1), std::chrono::seconds(240), {}, kFault);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.output.find("ps 1 is lost at the final checkpoint's gather") != std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps 1's backup: .* taking over the shard with no rollback")))
      << r.output;
  EXPECT_EQ(r.output.find("parameter server restore"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("checkpoint not written"), std::string::npos) << r.output;
  // The final checkpoint is whole, gathered from the backup: evaluated, it gives exactly what
  // the chief reported for the final values.
  ASSERT_EQ(testing::newest_checkpoint(out), kSteps) << r.output;
  std::smatch done;
  ASSERT_TRUE(std::regex_search(r.output, done, std::regex("done: (test accuracy [0-9.]+, test loss [0-9.]+)")))
      << r.output;
  const fs::path final_checkpoint = out / "checkpoints" / fmt::format("ckpt-{}", kSteps);
  TribRun eval = run_trib({"eval", std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml", "--checkpoint",
                           final_checkpoint.string(), "--set", "data.test_subset=10000"},
                          std::chrono::seconds(60));
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find(fmt::format("(step {}): {}", kSteps, done[1].str())), std::string::npos)
      << eval.output << "\n" << r.output;
  fs::remove_all(out);
}

TEST(PsFinalGather, WithoutABackupTheRunEndsWithOneLineAndThePreviousCheckpointResumes) {
  fs::path out = testing::fresh_path("faults", "ps_final_gather_restore");
  TribRun r = run_trib(job_with(out, 0), std::chrono::seconds(240), {}, kFault);
  ASSERT_TRUE(r.output.find("ps 1 is lost at the final checkpoint's gather") != std::string::npos) << r.output;
  // Not a finished run: the servers' state since the newest checkpoint is gone with server 1.
  EXPECT_NE(r.exit_code, 0) << r.output;
  const std::string previous = (out / "checkpoints" / "ckpt-100").string();
  EXPECT_NE(r.output.find("worker 0: the final checkpoint was not written: parameter server 1 was lost while the "
                          "chief gathered it ("),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the newest checkpoint is " + previous + " (step 100): continue from it with --resume " +
                          out.string()),
            std::string::npos)
      << r.output;
  // Nothing half-written is left; the previous checkpoint is the newest, and it resumes.
  EXPECT_EQ(testing::newest_checkpoint(out), 100) << r.output;
  EXPECT_FALSE(fs::exists(out / "checkpoints" / fmt::format("ckpt-{}", kSteps))) << r.output;
  std::vector<std::string> resume = job_with(out, 0);
  *std::find(resume.begin(), resume.end(), "--output") = "--resume";
  TribRun again = run_trib(resume, std::chrono::seconds(240));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("resumed from " + previous + " at step 100"), std::string::npos) << again.output;
  EXPECT_EQ(testing::newest_checkpoint(out), kSteps) << again.output;
  fs::remove_all(out);
}

TEST(PsFinalGather, AMalformedFaultHookFailsNamingTheVariable) {
  fs::path out = testing::fresh_path("faults", "ps_final_gather_bad_hook");
  TribRun r = run_trib(job_with(out, 0), std::chrono::seconds(120), {}, {{"TRIB_TEST_FAULT", "ps-lost-somewhere"}});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("TRIB_TEST_FAULT=ps-lost-somewhere: expected ps-lost-at-final-gather:INDEX"), std::string::npos)
      << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
