// RELIABILITY.md row 6, a bad network for real. Every role runs on a host of its own (a
// network namespace with its own address); one worker's link first turns slow and lossy
// (200 ms delay and 5% loss on everything it sends: `tc netem delay 200ms loss 5%`, done by
// trib-netem since this kernel has no netem), then carries nothing at all (100% loss). What
// must hold: training never stops while the link is bad (no deadlock); once the link is dead
// the worker is evicted and the others finish: a synchronous job re-forms its rounds without
// it, and a bounded-staleness job keeps its bound.
#include <signal.h>

#include "e2e/namespace_lab.h"

namespace trib::testing {
namespace {

#ifdef TRIB_NETEM_BINARY
const std::string kNetem = TRIB_NETEM_BINARY;
#else
const std::string kNetem;
#endif

// The newest "step N" a worker printed, or -1.
int last_step(const Trib& worker) {
  static const std::regex kStep(R"(step ([0-9]+)/)");
  int last = -1;
  const std::string& out = worker.output();
  for (auto it = std::sregex_iterator(out.begin(), out.end(), kStep); it != std::sregex_iterator(); ++it)
    last = std::stoi((*it)[1]);
  return last;
}

// Runs a 3-worker job with `strategy` on hosts of their own, turns worker 2's link bad and
// then dead, and returns the finished transcript. Hosts: 0 coordinator, 1 server, 2-4 workers.
std::string train_through_a_bad_link(const std::string& strategy) {
  NamespaceLab lab(5);
  if (std::string why = lab.create(); !why.empty()) {
    ADD_FAILURE() << "cannot make the hosts: " << why;
    return "";
  }
  TempDir dir("bad_network");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file(
      "job.yaml", tiny_job_with(strategy, "cluster: {ps: 1, workers: 3, heartbeat_ms: 200, peer_timeout_ms: 3000, "
                                          "coordinator_timeout_s: 20}\n"));
  std::string coordinator_address = lab.host(0).address + ":7000";
  Trib coordinator("coordinator",
                   {"coordinator", job, "--listen", coordinator_address, "--secret-file", secret, "--output",
                    (dir.path() / "run").string(), "--set", "training.steps=100000", "--set",
                    "training.log_every=5", "--set", "training.eval_every=1000000"},
                   lab.exec_in(0));
  EXPECT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  Trib ps("ps", {"ps", "--join", coordinator_address, "--bind", lab.host(1).address, "--secret-file", secret},
          lab.exec_in(1));
  std::vector<std::unique_ptr<Trib>> workers;
  for (int w = 0; w < 3; ++w)
    workers.push_back(std::make_unique<Trib>(
        "worker" + std::to_string(w),
        std::vector<std::string>{"worker", "--join", coordinator_address, "--bind", lab.host(2 + w).address,
                                 "--index", std::to_string(w), "--secret-file", secret},
        lab.exec_in(2 + w)));
  Trib& chief = *workers[0];
  std::vector<Trib*> all{&coordinator, &ps, workers[0].get(), workers[1].get(), workers[2].get()};

  EXPECT_TRUE(wait_until(all, [&] { return last_step(chief) >= 20; }, 60s)) << transcript(all);
  // The link turns bad: training goes on, slower.
  EXPECT_EQ(lab.impair(4, kNetem, 200, 5), "");
  int bad_from = last_step(chief);
  EXPECT_TRUE(wait_until(all, [&] { return last_step(chief) >= bad_from + 20; }, 90s))
      << "no progress over a slow, lossy link\n" << transcript(all);
  // The link dies: the worker behind it is evicted and the others go on.
  EXPECT_EQ(lab.partition(4), "");
  int dead_from = last_step(chief);
  EXPECT_TRUE(wait_until(all, [&] { return last_step(chief) >= dead_from + 40; }, 90s))
      << "no progress once the worker's link was dead\n" << transcript(all);
  EXPECT_TRUE(coordinator.printed("coordinator: worker 2 at " + lab.host(4).address)) << transcript(all);
  // The job ends as a preempted one does. The cut-off worker waits for the coordinator as for
  // one being restarted, up to cluster.coordinator_timeout_s, then ends naming it: nothing
  // hangs.
  chief.signal(SIGTERM);
  EXPECT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && chief.exited() && workers[1]->exited(); },
                         90s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(chief.exit_code(), 0) << transcript(all);
  EXPECT_EQ(lab.heal(4), "");
  EXPECT_TRUE(wait_until(all, [&] { return workers[2]->exited(); }, 60s)) << transcript(all);
  EXPECT_NE(workers[2]->exit_code(), 0) << transcript(all);
  EXPECT_TRUE(workers[2]->printed("coordinator at " + coordinator_address)) << transcript(all);
  return transcript(all);
}

// Sync rounds wait for every worker: the chief's steps going on after the link died show
// that the rounds re-formed without worker 2.
TEST(BadNetwork, SyncTrainingReformsWithoutAWorkerWhoseLinkDied) {
  if (std::string why = NamespaceLab::impairment_missing(kNetem); !why.empty()) GTEST_FAIL() << why;
  train_through_a_bad_link("{name: ps, mode: sync}");
}

TEST(BadNetwork, BoundedStalenessKeepsItsBoundThroughABadLink) {
  if (std::string why = NamespaceLab::impairment_missing(kNetem); !why.empty()) GTEST_FAIL() << why;
  std::string out = train_through_a_bad_link("{name: ps, mode: bounded, staleness: 2}");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("max clock gap ([0-9]+)"))) << out;
  EXPECT_LE(std::stoi(m[1]), 2) << out;
}

}  // namespace
}  // namespace trib::testing
