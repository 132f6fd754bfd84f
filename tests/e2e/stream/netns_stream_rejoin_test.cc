// Issue 12 across hosts, an allreduce stream job: SupervisedStream's rejoin
// (supervised_stream_test.cc) with each process on a host of its own, a network namespace with
// its own address (e2e/namespace_lab.h). Host 0 runs the coordinator, the broker (`trib broker`,
// librdkafka's mock cluster) and the producer (`trib produce`, live at 100 events a second);
// worker w runs on host w + 1. The mock broker listens on host 0's loopback only and advertises
// 127.0.0.1:PORT, so every other host reaches that address through NAT to host 0's address
// (NamespaceLab::share_loopback_port): the workers' Kafka traffic crosses the links, as their
// collectives and the coordinator's do. Worker 2 is killed (kill -9) once its step 225 is
// applied, as its own id record says, and started again on its host with the very same command
// once the coordinator has named the loss: it rejoins the running group at the group's step (no
// checkpoint loaded), every event is trained exactly once, and every process exits 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "e2e/cluster/supervised_job.h"
#include "e2e/namespace_lab.h"
#include "e2e/stream/netns_broker.h"
#include "e2e/stream/allreduce_stream_util.h"
#include "e2e/stream/stream_record.h"
#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

TEST(NetworkNamespacesStream, AWorkerStartedAgainOnItsHostRejoinsTheRunningGroupExactlyOnce) {
  NamespaceLab lab(4);
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns_stream_rejoin");
  const fs::path run = dir.path() / "run";
  const std::string secret = dir.file("secret", kSecretHex);

  // The broker first, so that it is stopped last.
  SharedBroker shared = start_shared_broker(lab);
  ASSERT_TRUE(shared.failure.empty()) << shared.failure;
  if (!shared.skip.empty()) GTEST_SKIP() << "skipping: " << shared.skip;
  Trib& broker = *shared.process;
  const std::string bootstrap = shared.bootstrap;
  const int broker_port = shared.port;

  // Live, 100 events a second: the survivors still train when worker 2 is started again.
  Trib producer("producer",
                {"produce", "--bootstrap", bootstrap, "--topic", "transactions", "--rate", "100", "--count", "6000"},
                lab.exec_in(0));
  const int steps = 600, every = 100;
  const std::string address = lab.host(0).address + ":7000";
  std::vector<std::string> args{"coordinator", stream_e2e::kExample, "--listen", address, "--secret-file", secret,
                                "--output", run.string()};
  std::vector<std::string> overrides = allreduce_stream_overrides(bootstrap, "netns-rejoin", steps, every);
  overrides.push_back("cluster.ps=0");  // allreduce: no servers to wait for
  for (const std::string& o : overrides) args.insert(args.end(), {"--set", o});
  Trib coordinator("coordinator", args, lab.exec_in(0));
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();

  // The command a supervisor runs for worker w on its host, the first time and after a loss.
  auto start = [&](int w, const std::string& name) {
    return std::make_unique<Trib>(name,
                                  std::vector<std::string>{"worker", "--join", address, "--index", std::to_string(w),
                                                           "--bind", lab.host(w + 1).address, "--secret-file", secret},
                                  lab.exec_in(w + 1));
  };
  std::vector<std::unique_ptr<Trib>> workers;
  for (int w = 0; w < 3; ++w) workers.push_back(start(w, "worker" + std::to_string(w)));
  std::vector<Trib*> all{&coordinator, workers[0].get(), workers[1].get(), workers[2].get(), &producer, &broker};
  ASSERT_TRUE(wait_until(all, [&] { return has_step(run / "stream_ids" / "worker-2.txt", 2 * every + 25); }, 180s))
      << transcript(all);
  workers[2]->signal(SIGKILL);
  ASSERT_TRUE(wait_exit(*workers[2], 10s, all)) << transcript(all);
  EXPECT_EQ(workers[2]->exit_code(), 128 + SIGKILL);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.printed("the job goes on with 2 worker(s)"); }, 30s))
      << transcript(all);
  std::unique_ptr<Trib> again = start(2, "worker2 started again");
  all.push_back(again.get());
  const std::vector<Trib*> running{&coordinator, workers[0].get(), workers[1].get(), again.get()};
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(running); }, 240s)) << transcript(all);
  const std::string out = transcript(all);
  for (Trib* p : running) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;
  EXPECT_TRUE(coordinator.printed("every worker finished")) << out;
  EXPECT_EQ(out.find("resumed from"), std::string::npos) << out;
  // The loss is named with the worker's own address, on its host.
  EXPECT_TRUE(std::regex_search(coordinator.output(),
                                std::regex("coordinator: worker 2 at " + lab.host(3).address +
                                           R"(:[0-9]+ was lost \(.*\); generation [0-9]+: the job goes on with 2 )"
                                           R"(worker\(s\))")))
      << out;
  // The workers' Kafka connections crossed the links: each worker's host sent its own through
  // the NAT to host 0 (nothing listens on its own loopback), and host 0 took them in.
  for (int h = 1; h <= 3; ++h) EXPECT_GT(lab.forwarded_connections(h, broker_port), 0) << lab.host(h).ns;
  EXPECT_GT(lab.forwarded_connections(0, broker_port), 3) << lab.host(0).ns;
  std::printf("[ info ] Kafka connections to host 0 from workers' hosts 1, 2, 3: %ld, %ld, %ld\n",
              lab.forwarded_connections(1, broker_port), lab.forwarded_connections(2, broker_port),
              lab.forwarded_connections(3, broker_port));

  stream_e2e::expect_rejoined_once(run, steps, every,
                                   {workers[0]->output(), workers[1]->output(), again->output()}, out);
}

}  // namespace
}  // namespace trib::testing
