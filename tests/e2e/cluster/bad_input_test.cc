// Bad input to a multi-host cluster (issue 4): an unreachable coordinator, a port in use, a
// wrong secret, a malformed cluster spec. Each gives one clear line and a non-zero exit,
// and whoever else is running carries on or is told to stop.
#include <netinet/in.h>
#include <sys/socket.h>

#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

TEST(BadInput, AnUnreachableCoordinatorIsNamedWithinTheTimeout) {
  TempDir dir("unreachable");
  std::string secret = dir.file("secret", kSecretHex);
  auto start = Clock::now();
  Trib worker("worker", {"worker", "--join", "127.0.0.1:1", "--secret-file", secret, "--timeout", "2"});
  ASSERT_TRUE(wait_exit(worker, 10s)) << worker.output();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_NE(worker.exit_code(), 0);
  EXPECT_TRUE(worker.printed("trib: error: cannot reach the coordinator at 127.0.0.1:1 within 2 s")) << worker.output();
  EXPECT_EQ(line_count(worker.output()), 1u) << worker.output();
  EXPECT_LT(seconds, 4.0) << "gave up at the timeout, not long after";
  EXPECT_GT(seconds, 1.5) << "kept trying until the timeout: roles on several hosts start in any order";
}

TEST(BadInput, APortInUseIsNamed) {
  TempDir dir("port");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  // Something else listens there already.
  auto held = std::make_unique<HeldPort>();
  ASSERT_TRUE(held->listening());
  std::string address = held->address();

  Trib coordinator("coordinator", {"coordinator", job, "--listen", address, "--secret-file", secret});
  ASSERT_TRUE(wait_exit(coordinator, 20s)) << coordinator.output();
  held.reset();
  EXPECT_NE(coordinator.exit_code(), 0);
  EXPECT_TRUE(coordinator.printed("trib: error: " + address + " is already in use")) << coordinator.output();
  EXPECT_EQ(line_count(coordinator.output()), 1u) << coordinator.output();
}

TEST(BadInput, AWrongSecretIsRejectedAndCountedWhileTheJobGoesOn) {
  TempDir dir("secret");
  std::string secret = dir.file("secret", kSecretHex);
  std::string wrong = dir.file("wrong", kOtherSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  Trib coordinator("coordinator", {"coordinator", job, "--listen", "127.0.0.1:0", "--secret-file", secret, "--output",
                                   (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  std::string address = coordinator.find("listening at (127\\.0\\.0\\.1:[0-9]+)");
  ASSERT_FALSE(address.empty()) << coordinator.output();

  Trib intruder("intruder", {"worker", "--join", address, "--secret-file", wrong, "--timeout", "10"});
  ASSERT_TRUE(wait_exit(intruder, 15s, {&coordinator})) << intruder.output();
  EXPECT_NE(intruder.exit_code(), 0);
  EXPECT_TRUE(intruder.printed("trib: error: " + address + " rejected the handshake")) << intruder.output();
  EXPECT_TRUE(intruder.printed("wrong cluster secret")) << intruder.output();
  EXPECT_EQ(line_count(intruder.output()), 1u) << intruder.output();

  // The coordinator counted it, named where it came from, and still admits the real roles.
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("1 connection(s) refused"); }, 5s))
      << coordinator.output();
  EXPECT_TRUE(coordinator.printed("failed to prove the cluster secret")) << coordinator.output();
  EXPECT_FALSE(coordinator.exited()) << coordinator.output();
  Trib ps("ps", {"ps", "--join", address, "--secret-file", secret});
  Trib worker("worker", {"worker", "--join", address, "--secret-file", secret});
  std::vector<Trib*> all{&coordinator, &ps, &worker};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 120s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(worker.exit_code(), 0) << transcript(all);
  EXPECT_EQ(ps.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(coordinator.printed("every worker finished")) << transcript(all);
}

TEST(BadInput, AMalformedClusterSpecIsAConfigErrorNamingTheKey) {
  TempDir dir("spec");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job(R"(cluster:
  spec:
    coordinator: "127.0.0.1:7000"
    ps: ["127.0.0.1:7001", "127.0.0.1:7001"]
    workers: ["127.0.0.1:7002"]
)"));
  for (std::vector<std::string> args : {std::vector<std::string>{"coordinator", job, "--secret-file", secret},
                                        std::vector<std::string>{"train", job, "--output", (dir.path() / "r").string()}}) {
    Trib p(args[0], args);
    ASSERT_TRUE(wait_exit(p, 20s)) << p.output();
    EXPECT_EQ(p.exit_code(), 2) << p.output();
    EXPECT_TRUE(p.printed("trib: error: config " + job + ": cluster.spec.ps[1] '127.0.0.1:7001' repeats cluster.spec.ps[0]"))
        << p.output();
    EXPECT_EQ(line_count(p.output()), 1u) << p.output();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "r")) << "nothing written";
}

TEST(BadInput, AFailedRoleStopsTheJobAndTheOthersAreToldNotLeftWaiting) {
  // The parameter server's listed port is taken: it fails with one line, the coordinator
  // names it and exits non-zero, and the worker that joined stops rather than wait.
  TempDir dir("failed_role");
  std::string secret = dir.file("secret", kSecretHex);
  HeldPort held;
  ASSERT_TRUE(held.listening());
  std::string taken = held.address();
  std::string coordinator_address = "127.0.0.1:" + std::to_string(free_port());
  std::string job = dir.file("job.yaml", tiny_job("cluster:\n  spec:\n    coordinator: \"" + coordinator_address +
                                                  "\"\n    ps: [\"" + taken + "\"]\n    workers: [\"127.0.0.1:" +
                                                  std::to_string(free_port()) + "\"]\n"));
  Trib coordinator("coordinator", {"coordinator", job, "--secret-file", secret});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  EXPECT_TRUE(coordinator.printed("listening at " + coordinator_address)) << "the spec's address";
  Trib worker("worker", {"worker", "--join", coordinator_address, "--secret-file", secret});
  wait_until({&coordinator, &worker}, [] { return false; }, 1s);  // the worker joins first
  Trib ps("ps", {"ps", "--join", coordinator_address, "--secret-file", secret});
  std::vector<Trib*> all{&coordinator, &worker, &ps};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 60s))
      << transcript(all);
  EXPECT_NE(ps.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(ps.printed("trib: error: " + taken + " is already in use")) << transcript(all);
  EXPECT_NE(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(coordinator.printed("ps 0")) << transcript(all);
  EXPECT_NE(worker.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(worker.printed("trib: error: the coordinator at " + coordinator_address +
                             " stopped the job before training began"))
      << transcript(all);
}

}  // namespace
}  // namespace trib::testing
