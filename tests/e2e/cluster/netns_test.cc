// Several hosts on one machine: the coordinator, a parameter server and a worker each in
// its own network namespace, joined by veth pairs to a bridge in a fourth namespace. Each
// role binds to its namespace's address, so they can reach each other only across the
// bridge, as on separate hosts. Every address used (10.99.0.0/24) exists only inside the
// namespaces this test creates; nothing is sent anywhere else.
#include <signal.h>
#include <unistd.h>

#include "e2e/namespace_lab.h"
#include "trib/cluster/local_cluster.h"

namespace trib::testing {
namespace {

TEST(NetworkNamespaces, OneRolePerNamespaceTrainsToTheEnd) {
  NamespaceLab lab;  // declared first: destroyed after the processes inside it
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  std::string coordinator_address = lab.host(0).address + ":7000";

  Trib coordinator("coordinator",
                   {"coordinator", job, "--listen", coordinator_address, "--secret-file", secret, "--output",
                    (dir.path() / "run").string()},
                   lab.exec_in(0));
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  Trib ps("ps", {"ps", "--join", coordinator_address, "--bind", lab.host(1).address, "--secret-file", secret},
          lab.exec_in(1));
  Trib worker("worker",
              {"worker", "--join", coordinator_address, "--bind", lab.host(2).address, "--secret-file", secret},
              lab.exec_in(2));
  std::vector<Trib*> all{&coordinator, &ps, &worker};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 50s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(ps.exit_code(), 0) << transcript(all);
  EXPECT_EQ(worker.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(ps.printed("ps 0 serving at " + lab.host(1).address + ":")) << transcript(all);
  EXPECT_TRUE(worker.printed("done: test accuracy")) << transcript(all);
  EXPECT_TRUE(coordinator.printed("every worker finished")) << transcript(all);
}

// Allreduce across hosts: every worker listens for its peers and publishes where. Worker 0
// is told --bind; worker 1 is told nothing and must publish the address of its interface
// that reaches the coordinator, not 127.0.0.1 (nor the job's default).
TEST(NetworkNamespaces, AllreduceWorkersOnTwoHostsFindEachOther) {
  NamespaceLab lab;
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns_allreduce");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job_with("{name: allreduce}", "cluster: {workers: 2}\n"));
  std::string coordinator_address = lab.host(0).address + ":7000";
  Trib coordinator("coordinator",
                   {"coordinator", job, "--listen", coordinator_address, "--secret-file", secret, "--output",
                    (dir.path() / "run").string()},
                   lab.exec_in(0));
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  Trib bound("worker0", {"worker", "--join", coordinator_address, "--bind", lab.host(1).address, "--index", "0",
                         "--secret-file", secret},
             lab.exec_in(1));
  Trib unbound("worker1", {"worker", "--join", coordinator_address, "--index", "1", "--secret-file", secret},
               lab.exec_in(2));
  std::vector<Trib*> all{&coordinator, &bound, &unbound};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && bound.exited() && unbound.exited(); }, 120s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(bound.exit_code(), 0) << transcript(all);
  EXPECT_EQ(unbound.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(coordinator.printed("every worker finished")) << transcript(all);
}

// A parameter server told no --bind publishes the address facing the coordinator.
TEST(NetworkNamespaces, ParameterServerWithoutBindPublishesTheAddressFacingTheCoordinator) {
  NamespaceLab lab;
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns_autobind");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  std::string coordinator_address = lab.host(0).address + ":7000";
  Trib coordinator("coordinator",
                   {"coordinator", job, "--listen", coordinator_address, "--secret-file", secret, "--output",
                    (dir.path() / "run").string()},
                   lab.exec_in(0));
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  Trib ps("ps", {"ps", "--join", coordinator_address, "--secret-file", secret}, lab.exec_in(1));
  Trib worker("worker", {"worker", "--join", coordinator_address, "--secret-file", secret}, lab.exec_in(2));
  std::vector<Trib*> all{&coordinator, &ps, &worker};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 120s))
      << transcript(all);
  EXPECT_EQ(ps.exit_code(), 0) << transcript(all);
  EXPECT_EQ(worker.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(ps.printed("ps 0 serving at " + lab.host(1).address + ":")) << transcript(all);
}

// Hosts that share nothing: besides its own network namespace, the parameter server has its
// own mount namespace with an empty /tmp, so the chief's run directory does not exist for
// it. The checkpoint (its shard included) lands in the chief's directory over the network,
// and a resumed job hands the server its shard back from there.
TEST(NetworkNamespaces, NoSharedFilesystemCheckpointsAndResumes) {
  NamespaceLab lab;
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  const std::string unshare = find_program("unshare");
  if (unshare.empty()) GTEST_SKIP() << "needs unshare (Debian: util-linux)";
  TempDir dir("netns_no_shared_fs");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  const std::string run = (dir.path() / "run").string();
  std::vector<std::string> ps_wrapper = lab.exec_in(1);
  for (const char* a : {"--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /tmp && exec \"$0\" \"$@\""})
    ps_wrapper.push_back(a);
  ps_wrapper.insert(ps_wrapper.begin() + static_cast<std::ptrdiff_t>(lab.exec_in(1).size()), unshare);

  auto run_job = [&](int port, const std::vector<std::string>& flags) {
    std::string address = lab.host(0).address + ":" + std::to_string(port);
    std::vector<std::string> cargs = {"coordinator", job, "--listen", address, "--secret-file", secret,
                                      "--set", "training.checkpoint_every=10"};
    cargs.insert(cargs.end(), flags.begin(), flags.end());
    Trib coordinator("coordinator", cargs, lab.exec_in(0));
    EXPECT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
        << coordinator.output();
    Trib ps("ps", {"ps", "--join", address, "--bind", lab.host(1).address}, ps_wrapper,
            {{cluster::kSecretEnv, kSecretHex}});
    Trib worker("worker", {"worker", "--join", address, "--bind", lab.host(2).address, "--secret-file", secret},
                lab.exec_in(2));
    std::vector<Trib*> all{&coordinator, &ps, &worker};
    EXPECT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 60s))
        << transcript(all);
    EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
    EXPECT_EQ(ps.exit_code(), 0) << transcript(all);
    EXPECT_EQ(worker.exit_code(), 0) << transcript(all);
    return transcript(all);
  };
  std::string first = run_job(7000, {"--output", run});
  ASSERT_EQ(newest_checkpoint(run), 40) << first;
  EXPECT_TRUE(fs::exists(fs::path(run) / "checkpoints" / "ckpt-40" / "ps-0.safetensors")) << first;
  std::string second = run_job(7001, {"--resume", run, "--set", "training.steps=60"});
  EXPECT_NE(second.find("resumed from " + run + "/checkpoints/ckpt-40 at step 40"), std::string::npos) << second;
  EXPECT_EQ(newest_checkpoint(run), 60) << second;
}

// `trib coordinator` of `job` on host 0 at `address`, writing `run`: a run long enough to lose
// a member in (3000 steps, a checkpoint every 100, evaluated only at the end).
Trib long_run_coordinator(NamespaceLab& lab, const std::string& address, const std::string& job,
                          const std::string& secret, const fs::path& run) {
  return Trib("coordinator",
              {"coordinator", job, "--listen", address, "--secret-file", secret, "--output", run.string(), "--set",
               "training.steps=3000", "--set", "training.checkpoint_every=100", "--set", "training.eval_every=1000000"},
              lab.exec_in(0));
}

// Recovery under any supervisor, across hosts: the parameter server's host loses it
// (kill -9) and starts it again with the same command; it rejoins at a new port, and the chief,
// in another namespace, restores it from its newest checkpoint over the network.
TEST(NetworkNamespaces, ARelaunchedServerRejoinsAndTheChiefRestoresItAcrossHosts) {
  NamespaceLab lab;
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns_ps_relaunch");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  const fs::path run = dir.path() / "run";
  std::string coordinator_address = lab.host(0).address + ":7000";
  Trib coordinator = long_run_coordinator(lab, coordinator_address, job, secret, run);
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  const std::vector<std::string> ps_command{"ps", "--join", coordinator_address, "--bind", lab.host(1).address,
                                            "--secret-file", secret};
  auto ps = std::make_unique<Trib>("ps", ps_command, lab.exec_in(1));
  Trib worker("worker",
              {"worker", "--join", coordinator_address, "--bind", lab.host(2).address, "--secret-file", secret},
              lab.exec_in(2));
  std::vector<Trib*> all{&coordinator, ps.get(), &worker};
  ASSERT_TRUE(wait_until(all, [&] { return newest_checkpoint(run) >= 100; }, 120s)) << transcript(all);
  ps->signal(SIGKILL);
  ASSERT_TRUE(wait_exit(*ps, 10s, all)) << transcript(all);
  Trib relaunched("ps relaunched", ps_command, lab.exec_in(1));
  all.push_back(&relaunched);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && relaunched.exited() && worker.exited(); }, 240s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(relaunched.exit_code(), 0) << transcript(all);
  EXPECT_EQ(worker.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(relaunched.printed("ps 0 serving at " + lab.host(1).address + ":")) << transcript(all);
  EXPECT_TRUE(std::regex_search(worker.output(), std::regex("worker 0: parameter server restore: ps 0 lost; every server "
                                                            "reloaded checkpoint \\S+/ckpt-[0-9]+ \\(step [0-9]+\\)")))
      << transcript(all);
  EXPECT_TRUE(worker.printed("done: test accuracy")) << transcript(all);
}

// Issue 12 across hosts: worker 0 (the chief) of a `trib coordinator` job, on its own host,
// killed and started again there with the same command (as its node's supervisor would); the
// coordinator waits for it, and it rejoins the running job in place with the server's state
// (no restore), the server and the other worker on hosts of their own.
TEST(NetworkNamespaces, AChiefStartedAgainOnItsHostRejoinsInPlace) {
  NamespaceLab lab(4);
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns_chief_rejoin");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 2}\n"));
  const fs::path run = dir.path() / "run";
  std::string coordinator_address = lab.host(0).address + ":7000";
  Trib coordinator = long_run_coordinator(lab, coordinator_address, job, secret, run);
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  Trib ps("ps", {"ps", "--join", coordinator_address, "--bind", lab.host(1).address, "--secret-file", secret},
          lab.exec_in(1));
  const std::vector<std::string> chief_command{"worker", "--join", coordinator_address, "--index", "0", "--bind",
                                               lab.host(2).address, "--secret-file", secret};
  auto chief = std::make_unique<Trib>("worker0", chief_command, lab.exec_in(2));
  Trib worker1("worker1",
               {"worker", "--join", coordinator_address, "--index", "1", "--bind", lab.host(3).address, "--secret-file",
                secret},
               lab.exec_in(3));
  std::vector<Trib*> all{&coordinator, &ps, chief.get(), &worker1};
  ASSERT_TRUE(wait_until(all, [&] { return newest_checkpoint(run) >= 100; }, 120s)) << transcript(all);
  chief->signal(SIGKILL);
  ASSERT_TRUE(wait_exit(*chief, 10s, all)) << transcript(all);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.printed("for worker 0, the chief, to come back"); }, 30s))
      << transcript(all);
  Trib again("worker0 again", chief_command, lab.exec_in(2));
  all.push_back(&again);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && again.exited() && worker1.exited(); },
                         240s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(ps.exit_code(), 0) << transcript(all);
  EXPECT_EQ(again.exit_code(), 0) << transcript(all);
  EXPECT_EQ(worker1.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(coordinator.printed("coordinator: worker 0 (the chief) came back from " + lab.host(2).address))
      << transcript(all);
  EXPECT_TRUE(std::regex_search(again.output(), std::regex("takes the run back at step [0-9]+ \\(the servers' state")))
      << transcript(all);
  EXPECT_FALSE(again.printed("parameter server restore")) << transcript(all);
  EXPECT_TRUE(again.printed("done: test accuracy")) << transcript(all);
}

// RELIABILITY.md row 5 across hosts: a worker on its own host is stopped (SIGSTOP) past the
// heartbeat timeout and evicted; thawed, it starts itself again as a new member, binding its
// host's address again (the old image's sockets were closed on the exec), and resumes with the
// server's values; the job finishes with every role on its host.
TEST(NetworkNamespaces, AWorkerStoppedOnItsHostRejoinsAsANewMemberOnceThawed) {
  NamespaceLab lab(4);
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns_thawed");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job =
      dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 2, heartbeat_ms: 500, peer_timeout_ms: 3000}\n"));
  const fs::path run = dir.path() / "run";
  std::string coordinator_address = lab.host(0).address + ":7000";
  Trib coordinator = long_run_coordinator(lab, coordinator_address, job, secret, run);
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  Trib ps("ps", {"ps", "--join", coordinator_address, "--bind", lab.host(1).address, "--secret-file", secret},
          lab.exec_in(1));
  Trib chief("worker0",
             {"worker", "--join", coordinator_address, "--index", "0", "--bind", lab.host(2).address, "--secret-file",
              secret},
             lab.exec_in(2));
  Trib worker1("worker1",
               {"worker", "--join", coordinator_address, "--index", "1", "--bind", lab.host(3).address, "--secret-file",
                secret},
               lab.exec_in(3));
  std::vector<Trib*> all{&coordinator, &ps, &chief, &worker1};
  ASSERT_TRUE(wait_until(all, [&] { return newest_checkpoint(run) >= 100; }, 120s)) << transcript(all);
  worker1.signal(SIGSTOP);
  const std::regex evicted("coordinator: worker 1 at " + lab.host(3).address + ":[0-9]+ was lost");
  ASSERT_TRUE(wait_until(all, [&] { return std::regex_search(coordinator.output(), evicted); }, 30s))
      << "the coordinator evicts it\n" << transcript(all);
  worker1.signal(SIGCONT);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && chief.exited() && worker1.exited(); },
                         240s))
      << transcript(all);
  for (Trib* p : all) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << transcript(all);
  EXPECT_TRUE(worker1.printed("is no longer a member of the job")) << transcript(all);
  EXPECT_TRUE(worker1.printed("it rejoins the job as a new member (1 of 3")) << transcript(all);
  std::smatch started, sent;
  ASSERT_TRUE(std::regex_search(worker1.output(), started,
                                std::regex("worker 1: starts at step ([0-9]+) with the servers' values \\(ps 0 crc32c "
                                           "([0-9a-f]{8})\\)")))
      << transcript(all);
  ASSERT_TRUE(std::regex_search(ps.output(), sent,
                                std::regex("ps 0: worker 1 rejoined at step ([0-9]+); values crc32c ([0-9a-f]{8})")))
      << transcript(all);
  EXPECT_EQ(started[2], sent[2]) << "the new member starts from the values the server sent";
  EXPECT_TRUE(chief.printed("done: test accuracy")) << transcript(all);
}

}  // namespace
}  // namespace trib::testing
