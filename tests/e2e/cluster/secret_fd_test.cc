// `--secret-fd N` for the roles that join a job: the descriptor is read once (a role makes
// several transports: the coordinator's, the servers' or peers'), so a worker and a server
// started with the secret on descriptor 3 train a job to its end.
#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

TEST(SecretFd, RolesGivenTheSecretOnADescriptorTrainTheJobToItsEnd) {
  TempDir dir("secret_fd");
  const std::string secret = dir.file("secret", kSecretHex);
  const std::string address = "127.0.0.1:" + std::to_string(free_port());
  const std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  Trib coordinator("coordinator", {"coordinator", job, "--listen", address, "--secret-file", secret, "--output",
                                   (dir.path() / "run").string()});
  // The shell opens the secret on descriptor 3 and execs trib with it.
  const std::vector<std::string> on_fd3 = {"/bin/sh", "-c", "exec \"$@\" 3<\"$SECRET\"", "sh"};
  const std::map<std::string, std::string> env = {{"SECRET", secret}};
  Trib ps("ps", {"ps", "--join", address, "--index", "0", "--secret-fd", "3"}, on_fd3, env);
  Trib worker("worker", {"worker", "--join", address, "--index", "0", "--secret-fd", "3"}, on_fd3, env);
  std::vector<Trib*> all{&coordinator, &ps, &worker};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 120s))
      << coordinator.output() << ps.output() << worker.output();
  for (Trib* p : all) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << p->output();
  EXPECT_TRUE(worker.printed("done: test accuracy")) << worker.output();
}

}  // namespace
}  // namespace trib::testing
