// A pipeline stage's process killed mid-run: the run ends, naming it, instead of hanging.
// With cluster.max_restarts the lost stage is relaunched alone and the others roll back in
// place to the newest checkpoint; a relaunched stage 0 (the chief) takes the run directory
// and the data back from it. Either way the run completes.
#include <signal.h>

#include <fmt/format.h>

#include <regex>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib::testing {
namespace {

std::string long_pipeline_job(int max_restarts,
                              const std::string& strategy = "{name: pipeline, stages: 3, micro_batches: 4}") {
  std::string job = tiny_job(fmt::format("cluster: {{max_restarts: {}}}\n", max_restarts));
  return std::regex_replace(job, std::regex("strategy: \\{name: ps, mode: async\\}\n"), "strategy: " + strategy + "\n");
}

// Runs the job and kills `worker` once stage 2 has reported step `after`.
TribRun run_and_kill(const std::vector<std::string>& args, const std::string& worker, int after, pid_t& killed) {
  pid_t pid = -1;
  killed = -1;
  return run_trib(args, 240s, [&](const std::string& line, Trib&) {
    std::smatch m;
    if (pid < 0 && std::regex_search(line, m, std::regex(worker + " \\(pid ([0-9]+)\\)"))) pid = std::stoi(m[1].str());
    if (pid > 0 && killed < 0 && line.find(fmt::format("step {}: test loss", after)) != std::string::npos) {
      ::kill(pid, SIGKILL);
      killed = pid;
    }
  });
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> args(const std::string& job, const std::string& out) {
  return {"train", job, "--output", out, "--set", "training.steps=1000", "--set", "training.eval_every=50",
          "--set", "training.checkpoint_every=50"};
}

// The long job in `dir` with `max_restarts`, its `worker` killed once step 100 is reported.
TribRun killed_after_step_100(TempDir& dir, int max_restarts, const std::string& worker, pid_t& killed) {
  std::string job = dir.file("job.yaml", long_pipeline_job(max_restarts));
  return run_and_kill(args(job, (dir.path() / "run").string()), worker, 100, killed);
}

TEST(PipelineLostStage, AKilledStageEndsTheRunNamingIt) {
  TempDir dir("pipeline_lost");
  pid_t killed = -1;
  TribRun r = killed_after_step_100(dir, 0, "worker1", killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(fmt::format("worker1 (pid {}) was killed by signal 9", killed)), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 120) << r.output;
}

// Stage 0 holds the run directory and the data: relaunched alone, it takes both back from
// the newest checkpoint, the other stages roll back to it in place, and it writes the rest of
// the run's checkpoints.
TEST(PipelineLostStage, WithRestartsALostStageZeroIsRelaunchedAloneAndTakesTheRunBack) {
  TempDir dir("pipeline_chief");
  pid_t killed = -1;
  TribRun r = killed_after_step_100(dir, 2, "worker0", killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(fmt::format("worker0 \\(pid {}\\) was killed by signal 9.*; relaunching "
                                                                  "\\(1 of 2\\)",
                                                                  killed))))
      << r.output;
  EXPECT_EQ(count(r.output, "relaunched (pid"), 1u) << r.output;
  EXPECT_EQ(count(r.output, "local cluster: started"), 1u) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m, std::regex("pipeline stage 0: layers .* from step (50|100) to 1000 \\(relaunched: round 1\\)")))
      << r.output;
  const std::string from = m[1].str();
  // Stage 1 names stage 0; stage 2 learns of it when stage 1 drops its links.
  EXPECT_NE(r.output.find("pipeline stage 1: stage 0 (worker 0 at"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pipeline stage 2: stage 1 (worker 1 at"), std::string::npos) << r.output;
  for (int stage : {0, 1, 2})
    EXPECT_NE(r.output.find(fmt::format("pipeline stage {}: round 1: every stage goes on from the checkpoint of step {}",
                                        stage, from)),
              std::string::npos)
        << "stage " << stage << "\n" << r.output;
  EXPECT_NE(r.output.find("step 1000: test loss"), std::string::npos) << r.output;
  // The relaunched chief wrote the run's last checkpoint, every stage's shard in it.
  std::optional<ValidCheckpoint> newest = load_latest_valid(dir.path() / "run" / "checkpoints");
  ASSERT_TRUE(newest.has_value()) << r.output;
  EXPECT_EQ(newest->checkpoint.step(), 1000) << r.output;
  EXPECT_GT(last_test_accuracy(r.output), 0.5) << r.output;
}

// Stage 1 killed: only its process is relaunched (one new PID, the others keep theirs: the
// cluster starts once and relaunches once), it restores its shard of the newest checkpoint,
// the other stages roll back to the same step in place, and the run completes and learns.
TEST(PipelineLostStage, WithRestartsALostStageIsRelaunchedAloneAndTheOthersRollBack) {
  TempDir dir("pipeline_relaunch");
  pid_t killed = -1;
  TribRun r = killed_after_step_100(dir, 2, "worker1", killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(fmt::format("worker1 \\(pid {}\\) was killed by signal 9.*; relaunching "
                                                                  "\\(1 of 2\\)",
                                                                  killed))))
      << r.output;
  for (int stage : {0, 2})
    EXPECT_NE(r.output.find(fmt::format("pipeline stage {}: stage 1 (worker 1 at", stage)), std::string::npos)
        << "stage " << stage << " names the lost stage\n" << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("local cluster: worker1 relaunched \\(pid ([0-9]+)\\)"))) << r.output;
  EXPECT_NE(std::stoi(m[1].str()), killed) << r.output;
  EXPECT_EQ(count(r.output, "relaunched (pid"), 1u) << r.output;     // worker0 and worker2 were not
  EXPECT_EQ(count(r.output, "local cluster: started"), 1u) << r.output;  // nor the whole job
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, m, std::regex("pipeline stage 1: layers .* from step (50|100) to 1000 \\(relaunched: round 1\\)")))
      << r.output;
  const std::string from = m[1].str();
  for (int stage : {0, 1, 2})
    EXPECT_NE(r.output.find(fmt::format("pipeline stage {}: round 1: every stage goes on from the checkpoint of step {}",
                                        stage, from)),
              std::string::npos)
        << "stage " << stage << "\n" << r.output;
  EXPECT_NE(r.output.find("step 1000: test loss"), std::string::npos) << r.output;
  EXPECT_GT(last_test_accuracy(r.output), 0.5) << r.output;
}

// With replicas a stage's allreduce group does not re-form: a lost stage of any replica
// restarts every process from the newest checkpoint instead (the job still completes).
TEST(PipelineLostStage, WithReplicasALostStageRestartsThePipelineFromItsCheckpoint) {
  TempDir dir("pipeline_replicas_restart");
  std::string job = dir.file("job.yaml", long_pipeline_job(2, "{name: pipeline, stages: 2, micro_batches: 2, replicas: 2}"));
  pid_t killed = -1;
  TribRun r = run_and_kill(args(job, (dir.path() / "run").string()), "worker3", 100, killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: restarting the job from its newest checkpoint (1 of 2)"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("relaunched (pid"), std::string::npos) << r.output;  // no stage relaunched alone
  EXPECT_TRUE(std::regex_search(r.output, std::regex("pipeline stage 1: layers .* from step (50|100) to 1000"))) << r.output;
  EXPECT_NE(r.output.find("step 1000: test loss"), std::string::npos) << r.output;
  std::optional<ValidCheckpoint> newest = load_latest_valid(dir.path() / "run" / "checkpoints");
  ASSERT_TRUE(newest.has_value()) << r.output;
  EXPECT_EQ(newest->checkpoint.step(), 1000) << r.output;
  EXPECT_GT(last_test_accuracy(r.output), 0.5) << r.output;
}

}  // namespace
}  // namespace trib::testing
