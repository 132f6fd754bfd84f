// Issue 12 across hosts, a parameter-server stream job: each process on a host of its own, a
// network namespace with its own address (e2e/namespace_lab.h), run as a user runs it across
// machines (`trib coordinator`, `trib ps --join`, `trib worker --join ... --index W`, each bound to
// its host's address). Host 0 runs the coordinator, the broker (`trib broker`, librdkafka's mock
// cluster) and the producer; the server runs on host 1, worker w on host w + 2. The mock broker
// advertises 127.0.0.1:PORT, reached from the other hosts through NAT to host 0
// (NamespaceLab::share_loopback_port), so the workers' Kafka traffic crosses the links too.
// Worker 1 kills itself once its step 150 is applied by the server
// (TRIB_TEST_FAULT=stream-worker-lost-at-step:1:150) and is started again on its host with the
// very same command once the coordinator has named the loss: it resumes its partitions at its
// last applied push (the server's cursor for it), nobody rewinds, every event is trained exactly
// once, and every process exits 0. The loopback versions: stream_ps_worker_loss_test.cc and
// supervised_ps_stream_chief_test.cc.
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
#include "e2e/stream/ps_stream_util.h"
#include "e2e/stream/stream_record.h"
#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

TEST(NetworkNamespacesStream, AParameterServerStreamJobsWorkerStartedAgainOnItsHostResumesAtItsLastAppliedPush) {
  NamespaceLab lab(4);
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  TempDir dir("netns_ps_stream");
  const fs::path run = dir.path() / "run";
  const std::string secret = dir.file("secret", kSecretHex);

  SharedBroker shared = start_shared_broker(lab);
  ASSERT_TRUE(shared.failure.empty()) << shared.failure;
  if (!shared.skip.empty()) GTEST_SKIP() << "skipping: " << shared.skip;
  Trib& broker = *shared.process;
  const std::string bootstrap = shared.bootstrap;
  const int broker_port = shared.port;

  // Every event before the job starts; the job ends after 3 s without one.
  const std::int64_t n = 6000;
  Trib producer("producer",
                {"produce", "--bootstrap", bootstrap, "--topic", "transactions", "--rate", "3000", "--count",
                 std::to_string(n)},
                lab.exec_in(0));
  ASSERT_TRUE(wait_exit(producer, 60s, {&producer, &broker})) << producer.output();
  ASSERT_EQ(producer.exit_code(), 0) << producer.output();

  const std::string address = lab.host(0).address + ":7000";
  std::vector<std::string> args{"coordinator", kStreamExample, "--listen", address, "--secret-file", secret,
                                "--output", run.string()};
  for (const std::string& o : {"data.kafka.bootstrap_servers=\"" + bootstrap + "\"",
                               std::string("data.kafka.record_ids=true"), std::string("data.kafka.shuffle_buffer=0"),
                               std::string("data.kafka.idle_timeout_s=3"), std::string("data.kafka.assignment=auto"),
                               std::string("data.kafka.group_id=netns-ps"), std::string("training.steps=0"),
                               std::string("training.batch=1"), std::string("training.eval_every=1000"),
                               std::string("training.checkpoint_every=100"), std::string("strategy.name=ps"),
                               std::string("strategy.mode=async"), std::string("cluster.workers=2"),
                               std::string("cluster.ps=1")})
    args.insert(args.end(), {"--set", o});
  Trib coordinator("coordinator", args, lab.exec_in(0));
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();

  // The command a supervisor runs for a role on its host, the first time and after a loss.
  const std::map<std::string, std::string> env{{"TRIB_TEST_FAULT", "stream-worker-lost-at-step:1:150"}};
  auto start = [&](const std::string& role, int index, int host, const std::string& name) {
    return std::make_unique<Trib>(name,
                                  std::vector<std::string>{role, "--join", address, "--index", std::to_string(index),
                                                           "--bind", lab.host(host).address, "--secret-file", secret},
                                  lab.exec_in(host), env);
  };
  std::unique_ptr<Trib> server = start("ps", 0, 1, "ps0");
  std::unique_ptr<Trib> chief = start("worker", 0, 2, "worker0");
  std::unique_ptr<Trib> worker1 = start("worker", 1, 3, "worker1");
  std::vector<Trib*> all{&coordinator, server.get(), chief.get(), worker1.get(), &broker};
  ASSERT_TRUE(wait_exit(*worker1, 180s, all)) << transcript(all);
  ASSERT_TRUE(worker1->printed("TRIB_TEST_FAULT: worker 1 is lost after its step 150")) << transcript(all);
  EXPECT_EQ(worker1->exit_code(), 128 + SIGKILL);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.printed("worker 1 at " + lab.host(3).address); }, 30s))
      << transcript(all);
  std::unique_ptr<Trib> again = start("worker", 1, 3, "worker1 started again");
  all.push_back(again.get());
  const std::vector<Trib*> running{&coordinator, server.get(), chief.get(), again.get()};
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(running); }, 240s)) << transcript(all);
  const std::string out = transcript(all);
  for (Trib* p : running) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;
  EXPECT_TRUE(coordinator.printed("every worker finished")) << out;
  EXPECT_EQ(out.find("resumed from"), std::string::npos) << out;
  EXPECT_EQ(out.find("rewound in place"), std::string::npos) << "no server restores, nobody rewinds\n" << out;
  // The loss is named with the worker's own address, on its host.
  EXPECT_TRUE(std::regex_search(coordinator.output(),
                                std::regex("coordinator: worker 1 at " + lab.host(3).address + R"(:[0-9]+ was lost)")))
      << out;
  std::smatch m;
  const std::string text = again->output();
  ASSERT_TRUE(std::regex_search(text, m,
                                std::regex(R"(worker 1: relaunched into the running job at step (\d+): its partitions )"
                                           R"([\d, ]+ continue at its last applied push)")))
      << out;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_EQ(std::stoll(m[1]), 150) << out;
  // Every role's traffic crossed the links: the workers' Kafka connections went through the NAT.
  for (int h = 2; h <= 3; ++h) EXPECT_GT(lab.forwarded_connections(h, broker_port), 0) << lab.host(h).ns;

  int runs = 0, rewinds = 0;
  const std::map<std::int64_t, int> seen = recorded_ids(run, 2, runs, rewinds);
  EXPECT_EQ(rewinds, 0) << out;
  expect_each_event_once(seen, n, run, out);
}

}  // namespace
}  // namespace trib::testing
