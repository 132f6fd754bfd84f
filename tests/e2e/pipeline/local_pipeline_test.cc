// `trib train` of a strategy-pipeline job: its stages as real processes on loopback, meeting
// through the local cluster's coordinator; checkpoints that resume, and bad input refused
// before any process starts.
#include <fmt/format.h>

#include <regex>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib::testing {
namespace {

std::string pipeline_job(const std::string& strategy, const std::string& extra_layers = "") {
  std::string job = tiny_job("cluster: {workers: 1}\n");
  job = std::regex_replace(job, std::regex("strategy: \\{name: ps, mode: async\\}\n"), strategy + "\n");
  job = std::regex_replace(job, std::regex("    - \\{type: dense, units: 10\\}\n"),
                           "    - {type: dense, units: 16, activation: relu}\n" + extra_layers +
                               "    - {type: dense, units: 10}\n");
  return job;
}
TEST(PipelineLocalCluster, ThreeStagesTrainAndCheckpointAsOneModel) {
  TempDir dir("pipeline3");
  std::string job = dir.file("job.yaml", pipeline_job("strategy: {name: pipeline, stages: 3, micro_batches: 4}"));
  std::string out = (dir.path() / "run").string();
  TribRun r = run_trib({"train", job, "--output", out, "--set", "training.eval_every=20"}, 180s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pipeline plan (planner)"), std::string::npos) << r.output;
  for (int s = 0; s < 3; ++s)
    EXPECT_NE(r.output.find(fmt::format("pipeline stage {}: done: parameters", s)), std::string::npos) << r.output;
  EXPECT_GT(last_test_accuracy(r.output), 0.5) << r.output;
  // One checkpoint holding every stage's variables: what one process loads.
  auto found = load_latest_valid(fs::path(out) / "checkpoints");
  ASSERT_TRUE(found.has_value()) << r.output;
  EXPECT_EQ(found->checkpoint.step(), 40);
  for (const char* name : {"dense_1/w", "dense_2/w", "dense_3/w"}) EXPECT_TRUE(found->checkpoint.contains(name)) << name;
  // `trib eval` of the pipeline's checkpoint, as one process.
  TribRun e = run_trib({"eval", job, "--checkpoint", out}, 60s);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("test accuracy"), std::string::npos) << e.output;
  // Resumed with more steps: it goes on from step 40.
  TribRun again = run_trib({"train", job, "--resume", out, "--set", "training.steps=60"}, 180s);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("from step 40 to 60"), std::string::npos) << again.output;
}

TEST(PipelineLocalCluster, TwoStagesTimesTwoReplicas) {
  TempDir dir("pipeline2x2");
  std::string job = dir.file("job.yaml", pipeline_job("strategy: {name: pipeline, stages: 2, micro_batches: 2, "
                                                      "schedule: gpipe, replicas: 2}"));
  TribRun r = run_trib({"train", job, "--output", (dir.path() / "run").string()}, 180s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("replica 1 of 2"), std::string::npos) << r.output;
  EXPECT_GT(last_test_accuracy(r.output), 0.5) << r.output;
}

// A checkpoint of one process resumes as a pipeline: each stage takes its variables and
// optimizer state by name.
TEST(PipelineLocalCluster, AOneProcessCheckpointResumesAsAPipeline) {
  TempDir dir("pipeline_from_local");
  std::string local = std::regex_replace(pipeline_job("strategy: {name: local}"), std::regex("cluster: \\{workers: 1\\}\n"), "");
  std::string local_job = dir.file("local.yaml", local);
  std::string out = (dir.path() / "run").string();
  TribRun first = run_trib({"train", local_job, "--output", out, "--set", "training.steps=20"}, 120s);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::string job = dir.file("job.yaml", pipeline_job("strategy: {name: pipeline, stages: 2, micro_batches: 2}"));
  TribRun r = run_trib({"train", job, "--resume", out}, 180s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("pipeline stage 1: layers [0-9]-3"))) << r.output;
  EXPECT_NE(r.output.find("from step 20 to 40"), std::string::npos) << r.output;
  EXPECT_GT(last_test_accuracy(r.output), 0.5) << r.output;
}

struct BadInput {
  std::string strategy, extra, expected;
};

TEST(PipelineLocalCluster, BadInputIsOneLineBeforeAnyProcessStarts) {
  TempDir dir("pipeline_bad");
  const std::vector<BadInput> cases{
      {"strategy: {name: pipeline, stages: 5}", "", "strategy.stages is 5 but the model has only 4 layer(s)"},
      {"strategy: {name: pipeline, stages: 2, micro_batches: 5}", "", "strategy.micro_batches (5) must divide training.batch (32)"},
      {"strategy: {name: pipeline, stages: 2}", "    - {type: dense, units: 8, stage: 1}\n    - {type: dense, units: 8, stage: 0}\n",
       "model.layers[4].stage is 0 after a layer of stage 1"},
      {"strategy: {name: pipeline, stages: 2, memory_mb: 0.01}", "", "the smallest limit that works is"},
  };
  for (const BadInput& c : cases) {
    std::string job = dir.file("job.yaml", pipeline_job(c.strategy, c.extra));
    TribRun r = run_trib({"train", job, "--output", (dir.path() / "run").string()}, 60s);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.strategy << "\n" << r.output;
    EXPECT_EQ(r.output.find("[worker0]"), std::string::npos) << "a process started for: " << c.strategy << "\n" << r.output;
  }
}

}  // namespace
}  // namespace trib::testing
