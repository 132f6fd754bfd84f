// The coordinator is not a single point of failure (issue 12), for real: a job of separate
// `trib` processes on loopback (coordinator, one parameter server, two workers) loses its
// coordinator to kill -9 mid-run. The servers and workers go on training meanwhile and
// reconnect with backoff; a coordinator started again on the same run directory takes the
// job back from its journal, in a later generation, and the job finishes with every step
// applied. With `cluster.store: etcd://...` (a 3-member etcd on loopback, when etcd-server is
// installed) one etcd member is killed too, and the job still goes on; and with the
// coordinator's journal file lost as well, the new coordinator takes the job back from etcd.
#include <signal.h>

#include <fstream>
#include <optional>

#include "e2e/trib_process.h"
#include "integration/cluster/etcd_test_cluster.h"
#include "trib/cluster/local_cluster.h"

namespace trib::testing {
namespace {

int metrics_rows(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// Runs the job, kills the coordinator mid-run (and `also_kill`, if given), restarts it.
struct Setup {
  std::string store = "";          // cluster.store
  bool allreduce = false;          // else asynchronous parameter servers (one server)
  std::function<void()> also_kill = nullptr;
  // The coordinator's machine is lost with its disk: the new one starts with no journal file
  // and takes the job back from cluster.store.
  bool journal_lost = false;
};

void kill_and_restart_the_coordinator(const Setup& setup) {
  TempDir dir("coordinator_restart");
  dir.file("secret", kSecretHex);
  const std::string address = "127.0.0.1:" + std::to_string(free_port());
  std::string yaml = tiny_job("cluster:\n  ps: " + std::string(setup.allreduce ? "0" : "1") +
                              "\n  workers: 2\n  coordinator: \"" + address +
                              "\"\n  heartbeat_ms: 500\n  peer_timeout_ms: 3000\n  store: \"" + setup.store + "\"\n");
  const std::string ps_strategy = "strategy: {name: ps, mode: async}";
  if (setup.allreduce) yaml.replace(yaml.find(ps_strategy), ps_strategy.size(), "strategy: {name: allreduce}");
  const std::string job = dir.file("job.yaml", yaml);
  const fs::path run = dir.path() / "run";
  const int steps = 6000;
  const std::vector<std::string> cargs = {"coordinator", job, "--secret-file", (dir.path() / "secret").string(),
                                          "--output", run.string(), "--set", fmt::format("training.steps={}", steps),
                                          "--set", "training.eval_every=500"};
  auto coordinator = std::make_unique<Trib>("coordinator", cargs);
  ASSERT_TRUE(wait_until({coordinator.get()}, [&] { return coordinator->printed("waiting for"); }, 20s))
      << coordinator->output();
  const std::map<std::string, std::string> env{{cluster::kSecretEnv, kSecretHex}};
  std::optional<Trib> ps;
  if (!setup.allreduce) ps.emplace("ps", std::vector<std::string>{"ps", "--join", address, "--index", "0"},
                                   std::vector<std::string>{}, env);
  Trib worker0("worker0", {"worker", "--join", address, "--index", "0"}, {}, env);
  Trib worker1("worker1", {"worker", "--join", address, "--index", "1"}, {}, env);
  std::vector<Trib*> members{&worker0, &worker1};
  if (ps) members.push_back(&*ps);
  std::vector<Trib*> all = members;
  all.push_back(coordinator.get());

  // Mid-run (the chief has evaluated once), the coordinator is killed.
  ASSERT_TRUE(wait_until(all, [&] { return metrics_rows(run) >= 1; }, 120s)) << transcript(all);
  coordinator->signal(SIGKILL);
  if (setup.also_kill) setup.also_kill();
  ASSERT_TRUE(wait_exit(*coordinator, 10s, members)) << transcript(all);
  const int rows_at_kill = metrics_rows(run);

  // Nobody exits: every member says the coordinator is away and reconnects, and the data
  // plane goes on (the chief keeps training and evaluating).
  ASSERT_TRUE(wait_until(members,
                         [&] {
                           for (Trib* m : members)
                             if (!m->printed("is away")) return false;
                           return metrics_rows(run) > rows_at_kill;
                         },
                         120s))
      << transcript(all);
  for (Trib* m : members) EXPECT_FALSE(m->exited()) << m->name() << "\n" << transcript(all);

  const fs::path journal = run / "coordinator-journal.json";
  if (setup.journal_lost) {
    ASSERT_TRUE(fs::remove(journal)) << journal;
  }
  auto restarted = std::make_unique<Trib>("coordinator2", cargs);
  all.back() = restarted.get();
  bool ended = wait_until(all,
                          [&] {
                            for (Trib* p : all)
                              if (!p->exited()) return false;
                            return true;
                          },
                          240s);
  ASSERT_TRUE(ended) << transcript(all);
  const std::string out = transcript(all);
  for (Trib* p : all) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;
  EXPECT_TRUE(restarted->printed("took the running job back from " +
                                 (setup.journal_lost ? std::string("cluster.store") : journal.string())))
      << out;
  for (Trib* m : members) EXPECT_TRUE(m->printed("reconnected to the coordinator at " + address)) << m->name();

  // A member sees the new generation: newer than the one it went on with.
  const std::string before = worker1.find("training goes on in generation ([0-9]+)");
  const std::string after = worker1.find("reconnected to the coordinator at [^ ]+ after [0-9.]+ s; generation ([0-9]+)");
  ASSERT_FALSE(before.empty()) << out;
  ASSERT_FALSE(after.empty()) << out;
  EXPECT_GT(std::stoll(after), std::stoll(before)) << out;

  // No step lost: the chief finished its steps, and (parameter servers) the server applied
  // every push of both workers (asynchronous: one update per worker step).
  EXPECT_TRUE(worker0.printed(fmt::format("{} steps", steps))) << out;
  if (setup.allreduce) return;
  const std::string updates = worker0.find("ps 0: [^\n]* ([0-9]+) updates");
  ASSERT_FALSE(updates.empty()) << out;
  EXPECT_EQ(std::stoll(updates), 2LL * steps) << out;
}

TEST(CoordinatorRestart, AKilledCoordinatorRestartedOnItsRunDirectoryTakesTheJobBackAndNoStepIsLost) {
  kill_and_restart_the_coordinator({});
}

TEST(CoordinatorRestart, AllreduceWorkersKeepStepping) {
  kill_and_restart_the_coordinator({.allreduce = true});
}

TEST(CoordinatorRestart, WithEtcdLosingAnEtcdMemberAndTheCoordinatorLosesNothing) {
  if (!cluster::testing::EtcdTestCluster::binary()) GTEST_SKIP() << "etcd-server is not installed";
  cluster::testing::EtcdTestCluster etcd(3);
  kill_and_restart_the_coordinator({.store = etcd.url(), .also_kill = [&] { etcd.kill(etcd.leader() == 0 ? 1 : 0); }});
}

// The coordinator's machine lost for good, with an etcd member: the coordinator started again
// elsewhere (here: with no journal file) takes the job back from the journal etcd keeps.
TEST(CoordinatorRestart, WithEtcdACoordinatorStartedElsewhereTakesTheJobBackFromEtcd) {
  if (!cluster::testing::EtcdTestCluster::binary()) GTEST_SKIP() << "etcd-server is not installed";
  cluster::testing::EtcdTestCluster etcd(3);
  kill_and_restart_the_coordinator(
      {.store = etcd.url(), .also_kill = [&] { etcd.kill(etcd.leader()); }, .journal_lost = true});
}

}  // namespace
}  // namespace trib::testing
