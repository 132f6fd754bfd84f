// A multi-host job checkpoints and resumes with no shared filesystem: the parameter server
// and the second worker each run in a mount namespace of their own with an empty tmpfs over
// /tmp, so they cannot see the chief's run directory (under /tmp) at all. Every checkpoint,
// the server's shard included, must still land whole in the chief's directory, and a resumed
// job must hand the server its shard back from there.
#include <sys/wait.h>

#include "e2e/trib_process.h"
#include "trib/cluster/local_cluster.h"

namespace trib::testing {
namespace {

// Runs trib with a private, empty /tmp (its own mount namespace; needs root).
std::vector<std::string> own_tmp() {
  return {find_program("unshare"), "--mount", "--propagation", "private", "sh", "-c",
          "mount -t tmpfs tmpfs /tmp && exec \"$0\" \"$@\""};
}

bool own_tmp_works() {
  if (find_program("unshare").empty()) return false;
  int rc = std::system("unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /tmp' >/dev/null 2>&1");
  return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

struct Job {
  int coordinator = -1, ps = -1, worker0 = -1, worker1 = -1;
  std::string output;
};

Job run_job(const TempDir& dir, const std::string& job, const std::string& address,
            const std::vector<std::string>& run_flags) {
  std::vector<std::string> cargs = {"coordinator", job, "--secret-file", (dir.path() / "secret").string()};
  cargs.insert(cargs.end(), run_flags.begin(), run_flags.end());
  Trib coordinator("coordinator", cargs);
  EXPECT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  const std::map<std::string, std::string> env{{cluster::kSecretEnv, kSecretHex}};
  Trib ps("ps", {"ps", "--join", address, "--index", "0"}, own_tmp(), env);
  Trib worker0("worker0", {"worker", "--join", address, "--index", "0"}, {}, env);
  Trib worker1("worker1", {"worker", "--join", address, "--index", "1"}, own_tmp(), env);
  std::vector<Trib*> all{&coordinator, &ps, &worker0, &worker1};
  bool ended = wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker0.exited() && worker1.exited(); },
                          180s);
  EXPECT_TRUE(ended) << transcript(all);
  Job r;
  if (!ended) return r;
  r = {coordinator.exit_code(), ps.exit_code(), worker0.exit_code(), worker1.exit_code(), transcript(all)};
  return r;
}

TEST(NoSharedFilesystem, ServersSendTheirShardsToTheChiefAndGetThemBackOnResume) {
  if (!own_tmp_works()) GTEST_SKIP() << "cannot give a process its own /tmp (unshare --mount and mount need root)";
  TempDir dir("no_shared_fs");
  dir.file("secret", kSecretHex);
  const std::string address = "127.0.0.1:" + std::to_string(free_port());
  const std::string job = dir.file(
      "job.yaml", tiny_job("cluster:\n  ps: 1\n  workers: 2\n  coordinator: \"" + address + "\"\n") +
                      "\n");
  const std::string run = (dir.path() / "run").string();

  Job first = run_job(dir, job, address, {"--output", run, "--set", "training.checkpoint_every=10"});
  ASSERT_EQ(first.coordinator, 0) << first.output;
  EXPECT_EQ(first.ps, 0) << first.output;
  EXPECT_EQ(first.worker0, 0) << first.output;
  EXPECT_EQ(first.worker1, 0) << first.output;
  ASSERT_EQ(newest_checkpoint(run), 40) << first.output;
  EXPECT_TRUE(fs::exists(fs::path(run) / "checkpoints" / "ckpt-40" / "ps-0.safetensors")) << first.output;

  Job second = run_job(dir, job, address,
                       {"--resume", run, "--set", "training.checkpoint_every=10", "--set", "training.steps=60"});
  ASSERT_EQ(second.coordinator, 0) << second.output;
  EXPECT_EQ(second.ps, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from " + run + "/checkpoints/ckpt-40 at step 40"), std::string::npos)
      << second.output;
  EXPECT_EQ(newest_checkpoint(run), 60) << second.output;
}

}  // namespace
}  // namespace trib::testing
