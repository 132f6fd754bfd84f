// A pipeline stage's process killed mid-run: the run ends, naming it, instead of hanging;
// with cluster.max_restarts every stage starts again from the newest checkpoint and the run
// completes.
#include <signal.h>

#include <fmt/format.h>

#include <regex>

#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

std::string long_pipeline_job(int max_restarts) {
  std::string job = tiny_job(fmt::format("cluster: {{max_restarts: {}}}\n", max_restarts));
  return std::regex_replace(job, std::regex("strategy: \\{name: ps, mode: async\\}\n"),
                            "strategy: {name: pipeline, stages: 3, micro_batches: 4}\n");
}

// Runs the job and kills worker1 (stage 1) once stage 2 has reported step `after`.
TribRun run_and_kill_stage1(const std::vector<std::string>& args, int after, pid_t& killed) {
  pid_t stage1 = -1;
  killed = -1;
  return run_trib(args, 240s, [&](const std::string& line, Trib&) {
    std::smatch m;
    if (stage1 < 0 && std::regex_search(line, m, std::regex("worker1 \\(pid ([0-9]+)\\)"))) stage1 = std::stoi(m[1].str());
    if (stage1 > 0 && killed < 0 && line.find(fmt::format("step {}: test loss", after)) != std::string::npos) {
      ::kill(stage1, SIGKILL);
      killed = stage1;
    }
  });
}

std::vector<std::string> args(const std::string& job, const std::string& out) {
  return {"train", job, "--output", out, "--set", "training.steps=1000", "--set", "training.eval_every=50",
          "--set", "training.checkpoint_every=50"};
}

TEST(PipelineLostStage, AKilledStageEndsTheRunNamingIt) {
  TempDir dir("pipeline_lost");
  std::string job = dir.file("job.yaml", long_pipeline_job(0));
  pid_t killed = -1;
  TribRun r = run_and_kill_stage1(args(job, (dir.path() / "run").string()), 100, killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(fmt::format("worker1 (pid {}) was killed by signal 9", killed)), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 120) << r.output;
}

TEST(PipelineLostStage, WithRestartsThePipelineResumesFromItsCheckpoint) {
  TempDir dir("pipeline_restart");
  std::string job = dir.file("job.yaml", long_pipeline_job(2));
  pid_t killed = -1;
  TribRun r = run_and_kill_stage1(args(job, (dir.path() / "run").string()), 100, killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: restarting the job from its newest checkpoint (1 of 2)"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("pipeline stage 1: layers .* from step (50|100) to 1000"))) << r.output;
  EXPECT_NE(r.output.find("step 1000: test loss"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trib::testing
