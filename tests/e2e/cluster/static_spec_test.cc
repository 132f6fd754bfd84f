// A static cluster spec: the coordinator listens at spec.coordinator with no --listen, and
// each parameter server listens on the port its entry lists.
#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

TEST(StaticSpec, RolesListenWhereTheSpecSaysAndTrainToTheEnd) {
  TempDir dir("spec_ok");
  std::string secret = dir.file("secret", kSecretHex);
  std::string coordinator_address = "127.0.0.1:" + std::to_string(free_port());
  std::string ps_port = std::to_string(free_port());
  std::string job = dir.file("job.yaml", tiny_job("cluster:\n  spec:\n    coordinator: \"" + coordinator_address +
                                                  "\"\n    ps: [\"127.0.0.1:" + ps_port +
                                                  "\"]\n    workers: [\"127.0.0.1:" + std::to_string(free_port()) +
                                                  "\"]\n"));
  Trib coordinator("coordinator", {"coordinator", job, "--secret-file", secret, "--output", (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  EXPECT_TRUE(coordinator.printed("listening at " + coordinator_address + "; waiting for 1 parameter server(s) and 1 "
                                  "worker(s)"))
      << coordinator.output();
  // A wildcard bind still advertises an address the others can dial: the one facing the
  // coordinator.
  Trib ps("ps", {"ps", "--join", coordinator_address, "--bind", "0.0.0.0", "--secret-file", secret});
  Trib worker("worker", {"worker", "--join", coordinator_address, "--secret-file", secret});
  std::vector<Trib*> all{&coordinator, &ps, &worker};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 120s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(ps.exit_code(), 0) << transcript(all);
  EXPECT_EQ(worker.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(ps.printed("ps 0 serving at 127.0.0.1:" + ps_port)) << transcript(all);
  EXPECT_TRUE(fs::exists(dir.path() / "run" / "metrics.jsonl")) << transcript(all);
}

}  // namespace
}  // namespace trib::testing
