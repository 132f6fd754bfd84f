// Issue 12 across hosts, allreduce: the coordinator and 2 workers of a `trib coordinator` job,
// each in a network namespace with an address of its own (e2e/namespace_lab.h). A worker is
// killed (kill -9) once checkpoint 100 is written and, once the coordinator has named its loss,
// started again on its own host with the very same command, as its node's supervisor would.
// It joins the running group with the survivor's variables (the checksums every member prints
// as the generation starts are equal), nothing is restored from a checkpoint, every process
// exits 0, the newest checkpoint is the run's last step, and the accuracy is within a point of
// the same job run across the same hosts without the fault.
#include <signal.h>

#include <cstdio>

#include <fmt/format.h>

#include "e2e/cluster/supervised_job.h"
#include "e2e/namespace_lab.h"
#include "e2e/run_output.h"
#include "faults/collectives/allreduce_cluster.h"

namespace trib::testing {
namespace {

constexpr int kSteps = 3000;

// What a run across hosts left, read before its directory goes.
struct AcrossHosts {
  bool ok = false;        // every process still running at the end exited 0
  double accuracy = 0;    // the (last) chief's
  int newest = -1;        // the newest checkpoint's step
  std::string back;       // the output of the worker started again
  std::string survivor;   // the output of the worker that was not lost
  std::string coordinator;
  std::string transcript;
};

// The tiny job under allreduce with 2 workers, the coordinator on host 0 of `lab` at `port`,
// worker w on host w + 1. With `lose` (0 or 1), that worker is killed once checkpoint 100 is
// written and started again on its host once the coordinator has said it lost it.
AcrossHosts run_across_hosts(const NamespaceLab& lab, int port, int lose) {
  AcrossHosts r;
  TempDir dir(fmt::format("netns_allreduce_{}", port));
  const std::string secret = dir.file("secret", kSecretHex);
  const std::string job = dir.file("job.yaml", tiny_job_with("{name: allreduce}", "cluster: {workers: 2}\n"));
  const fs::path run = dir.path() / "run";
  const std::string address = lab.host(0).address + ":" + std::to_string(port);
  // 12,000 examples and a cosine schedule: the learning rate ends near 0, so the final model
  // does not swing by a point from one step to the next (with a constant rate, a run that lost
  // a process for 0.1 s ended up to 1.7 points below the fault-free one).
  Trib coordinator("coordinator",
                   {"coordinator", job, "--listen", address, "--secret-file", secret, "--output", run.string(), "--set",
                    fmt::format("training.steps={}", kSteps), "--set", "training.checkpoint_every=100", "--set",
                    "training.eval_every=1000000", "--set", "data.train_subset=12000", "--set",
                    "data.test_subset=10000", "--set", "schedule.name=cosine"},
                   lab.exec_in(0));
  if (!wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s)) {
    ADD_FAILURE() << coordinator.output();
    return r;
  }
  // The command a supervisor runs for worker w on its host, the first time and after a loss.
  auto command = [&](int w) {
    return std::vector<std::string>{"worker",         "--join", address, "--index", std::to_string(w), "--bind",
                                    lab.host(w + 1).address, "--secret-file", secret};
  };
  std::vector<std::unique_ptr<Trib>> workers;
  for (int w : {0, 1})
    workers.push_back(std::make_unique<Trib>(fmt::format("worker{}", w), command(w), lab.exec_in(w + 1)));
  std::vector<Trib*> all{&coordinator, workers[0].get(), workers[1].get()};
  std::vector<Trib*> running = all;
  std::unique_ptr<Trib> again;
  if (lose >= 0) {
    Trib& lost = *workers[static_cast<std::size_t>(lose)];
    if (!wait_until(all, [&] { return newest_checkpoint(run) >= 100; }, 120s)) {
      ADD_FAILURE() << "no checkpoint 100\n" << transcript(all);
      return r;
    }
    lost.signal(SIGKILL);
    EXPECT_TRUE(wait_exit(lost, 10s, all)) << transcript(all);
    EXPECT_EQ(lost.exit_code(), 128 + SIGKILL);
    const std::string named = lose == 0 ? "for worker 0, the chief, to come back" : "the job goes on with 1 worker(s)";
    if (!wait_until(all, [&] { return coordinator.printed(named); }, 30s)) {
      ADD_FAILURE() << "the coordinator did not say: " << named << "\n" << transcript(all);
      return r;
    }
    again = std::make_unique<Trib>(fmt::format("worker{} started again", lose), command(lose), lab.exec_in(lose + 1));
    all.push_back(again.get());
    std::erase(running, &lost);
    running.push_back(again.get());
  }
  const bool ended = wait_until(all, [&] { return all_exited(running); }, 300s);
  r.transcript = transcript(all);
  EXPECT_TRUE(ended) << r.transcript;
  if (!ended) return r;
  r.ok = true;
  for (Trib* p : running) {
    EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << r.transcript;
    r.ok = r.ok && p->exit_code() == 0;
  }
  Trib* chief = lose == 0 ? again.get() : workers[0].get();
  EXPECT_TRUE(chief->printed("done: test accuracy")) << r.transcript;
  r.accuracy = final_accuracy(chief->output());
  r.newest = newest_checkpoint(run);
  r.back = again ? again->output() : "";
  r.survivor = lose >= 0 ? workers[static_cast<std::size_t>(1 - lose)]->output() : "";
  r.coordinator = coordinator.output();
  return r;
}

// Worker `lost` came back as rank `lost` of 2 with the survivor's variables: the checksum it
// prints as it joins equals the one the survivor prints as the same generation starts. Nothing
// was restored from a checkpoint, and the run ended as the fault-free one did.
void expect_rejoined_in_place(const AcrossHosts& clean, const AcrossHosts& r, int lost) {
  ASSERT_TRUE(clean.ok) << clean.transcript;
  ASSERT_TRUE(r.ok) << r.transcript;
  const int survivor = 1 - lost;
  const std::regex joins(fmt::format(R"(joined the allreduce group as generation ([0-9]+): rank {} of 2; starts at )"
                                     R"(step ([0-9]+) with rank {}'s variables \(crc32c ([0-9a-f]{{8}})\))",
                                     lost, survivor));
  const std::vector<std::string> joined = find_line(r.back, joins);
  ASSERT_FALSE(joined.empty()) << r.transcript;
  EXPECT_GE(std::stoi(joined[2]), 100) << r.transcript;
  const std::regex same(fmt::format(R"(the group went on as generation {} with 2 workers \(was 1; this one rank {}\); )"
                                    R"(back to step {} .*variables crc32c ([0-9a-f]{{8}}))",
                                    joined[1], survivor, joined[2]));
  const std::vector<std::string> went_on = find_line(r.survivor, same);
  ASSERT_FALSE(went_on.empty()) << r.transcript;
  EXPECT_EQ(went_on[1], joined[3]) << "the worker started again starts with the survivor's variables\n" << r.transcript;
  // In place: no whole-job restart, no rollback to a checkpoint.
  EXPECT_EQ(r.transcript.find("resumed from"), std::string::npos) << r.transcript;
  EXPECT_EQ(r.transcript.find("rolled back to checkpoint"), std::string::npos) << r.transcript;
  EXPECT_TRUE(r.coordinator.find("every worker finished") != std::string::npos) << r.transcript;
  EXPECT_EQ(clean.newest, kSteps) << clean.transcript;
  EXPECT_EQ(r.newest, kSteps) << r.transcript;
  EXPECT_TRUE(loses_at_most(r.accuracy, clean.accuracy, 0.01)) << r.transcript;
  std::printf("[ info ] %s; accuracy %.4f (fault-free %.4f)\n", joined[0].c_str(), r.accuracy, clean.accuracy);
}

TEST(NetworkNamespacesAllreduce, AChiefStartedAgainOnItsHostRejoinsTheRunningGroupInPlace) {
  NamespaceLab lab(3);
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  const AcrossHosts clean = run_across_hosts(lab, 7000, -1);
  const AcrossHosts r = run_across_hosts(lab, 7001, 0);
  const std::regex waits("coordinator: worker 0 at " + lab.host(1).address +
                          ":[0-9]+ was lost \\(.*\\); generation [0-9]+: the job waits up to");
  EXPECT_TRUE(std::regex_search(r.coordinator, waits)) << r.transcript;
  EXPECT_TRUE(r.coordinator.find("coordinator: worker 0 (the chief) came back from " + lab.host(1).address) !=
              std::string::npos)
      << r.transcript;
  expect_rejoined_in_place(clean, r, 0);
}

TEST(NetworkNamespacesAllreduce, AWorkerStartedAgainOnItsHostRejoinsTheRunningGroup) {
  NamespaceLab lab(3);
  if (std::string why = lab.create(); !why.empty())
    GTEST_SKIP() << "skipping the multi-host test in network namespaces: " << why;
  const AcrossHosts clean = run_across_hosts(lab, 7000, -1);
  const AcrossHosts r = run_across_hosts(lab, 7001, 1);
  EXPECT_TRUE(std::regex_search(r.coordinator, std::regex("coordinator: worker 1 at " + lab.host(2).address +
                                                          ":[0-9]+ was lost \\(.*\\); generation [0-9]+: the job goes "
                                                          "on with 1 worker\\(s\\)")))
      << r.transcript;
  expect_rejoined_in_place(clean, r, 1);
}

}  // namespace
}  // namespace trib::testing
