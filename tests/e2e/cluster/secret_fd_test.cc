// `--secret-fd N` for the roles that join a job: the descriptor is read once (a role makes
// several transports: the coordinator's, the servers' or peers'), so a worker and a server
// started with the secret on descriptor 3 train a job to its end.
#include <signal.h>

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

// A worker evicted while stopped starts itself again once thawed (app/rejoin_exec.h): the
// descriptor its secret came on was read and closed at its start, so the new image finds the
// secret on that descriptor again (a pipe), rejoins and trains to the end.
TEST(SecretFd, AWorkerGivenTheSecretOnADescriptorRejoinsWithItOnceThawed) {
  TempDir dir("secret_fd_thawed");
  const std::string secret = dir.file("secret", kSecretHex);
  const std::string address = "127.0.0.1:" + std::to_string(free_port());
  const std::string job = dir.file(
      "job.yaml", tiny_job("cluster: {ps: 1, workers: 2, heartbeat_ms: 500, peer_timeout_ms: 3000}\n"));
  const fs::path run = dir.path() / "run";
  Trib coordinator("coordinator", {"coordinator", job, "--listen", address, "--secret-file", secret, "--output",
                                   run.string(), "--set", "training.steps=3000", "--set", "training.checkpoint_every=100",
                                   "--set", "training.eval_every=1000000"});
  const std::vector<std::string> on_fd3 = {"/bin/sh", "-c", "exec \"$@\" 3<\"$SECRET\"", "sh"};
  const std::map<std::string, std::string> env = {{"SECRET", secret}};
  Trib ps("ps", {"ps", "--join", address, "--index", "0", "--secret-fd", "3"}, on_fd3, env);
  Trib chief("worker0", {"worker", "--join", address, "--index", "0", "--secret-fd", "3"}, on_fd3, env);
  Trib worker1("worker1", {"worker", "--join", address, "--index", "1", "--secret-fd", "3"}, on_fd3, env);
  std::vector<Trib*> all{&coordinator, &ps, &chief, &worker1};
  ASSERT_TRUE(wait_until(all, [&] { return newest_checkpoint(run) >= 100; }, 120s)) << transcript(all);
  worker1.signal(SIGSTOP);
  const std::regex evicted("coordinator: worker 1 at [^ ]+ was lost");
  ASSERT_TRUE(wait_until(all, [&] { return std::regex_search(coordinator.output(), evicted); }, 30s))
      << "the coordinator evicts it\n" << transcript(all);
  worker1.signal(SIGCONT);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && chief.exited() && worker1.exited(); },
                         240s))
      << transcript(all);
  for (Trib* p : all) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << transcript(all);
  EXPECT_TRUE(worker1.printed("it rejoins the job as a new member (1 of 3")) << transcript(all);
  EXPECT_TRUE(worker1.printed("worker 1: starts at step")) << "the new image took the secret from descriptor 3\n"
                                                           << transcript(all);
  EXPECT_TRUE(chief.printed("done: test accuracy")) << transcript(all);
}

}  // namespace
}  // namespace trib::testing
