// A pipeline launched as `trib coordinator` and one `trib worker` per stage, as on separate
// hosts: worker 0 plans the cut and hands it to the other through the coordinator's store.
#include <regex>

#include "e2e/trib_process.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib::testing {
namespace {

TEST(PipelineAcrossHosts, CoordinatorAndOneWorkerPerStageTrainToTheEnd) {
  TempDir dir("pipeline_hosts");
  std::string secret = dir.file("secret", kSecretHex);
  std::string coordinator_address = "127.0.0.1:" + std::to_string(free_port());
  std::string job = tiny_job("cluster: {coordinator: \"" + coordinator_address + "\"}\n");
  job = std::regex_replace(job, std::regex("strategy: \\{name: ps, mode: async\\}\n"),
                           "strategy: {name: pipeline, stages: 2, micro_batches: 2}\n");
  std::string job_file = dir.file("job.yaml", job);
  Trib coordinator("coordinator", {"coordinator", job_file, "--secret-file", secret, "--output", (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s)) << coordinator.output();
  EXPECT_TRUE(coordinator.printed("2 worker(s)")) << coordinator.output();
  Trib w1("worker1", {"worker", "--join", coordinator_address, "--secret-file", secret, "--index", "1"});
  Trib w0("worker0", {"worker", "--join", coordinator_address, "--bind", "0.0.0.0", "--secret-file", secret, "--index", "0"});
  std::vector<Trib*> all{&coordinator, &w0, &w1};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && w0.exited() && w1.exited(); }, 180s)) << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(w0.exit_code(), 0) << transcript(all);
  EXPECT_EQ(w1.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(w0.printed("pipeline plan (planner)")) << transcript(all);
  EXPECT_TRUE(w1.printed("pipeline stage 1: done")) << transcript(all);
  EXPECT_TRUE(w1.printed("step 40: test loss")) << transcript(all);
  auto found = load_latest_valid(dir.path() / "run" / "checkpoints");
  ASSERT_TRUE(found.has_value()) << transcript(all);
  EXPECT_EQ(found->checkpoint.step(), 40);
}

}  // namespace
}  // namespace trib::testing
