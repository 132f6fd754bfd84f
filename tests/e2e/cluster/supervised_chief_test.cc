// A lost chief under `trib coordinator` (issue 12): a multi-host job of separate processes on
// loopback (coordinator, a parameter server for ps, 2 workers), started with the commands a
// user types. Worker 0 is killed (kill -9) mid-run; the coordinator says it waits for it, and
// the test, acting as the node's supervisor, starts it again with the very same command. The
// new worker 0 takes the run back as a chief relaunched by the local launcher does (allreduce:
// it joins the running group with the members' variables; ps: it rejoins in place with the
// server's state, nothing rolled back), and the job finishes: every process exits 0, the newest checkpoint is the
// run's last step, and the accuracy is within a point of the same job run without a fault.
#include <signal.h>

#include <algorithm>
#include <regex>

#include "e2e/cluster/supervised_job.h"
#include "e2e/run_output.h"

namespace trib::testing {
namespace {

// 2 workers, 4 epochs of a 24,000-example subset at batch 64 (187 steps an epoch, 748 in all):
// most of the run is left when the chief is killed after checkpoint 100, however slowly the
// test's process is scheduled. A checkpoint every 50 steps, evaluations on 2,000 test examples.
std::vector<std::string> overrides(int ps) {
  return {"cluster.workers=2",         fmt::format("cluster.ps={}", ps), "cluster.heartbeat_ms=500",
          "cluster.peer_timeout_ms=3000", "threads.intra=1",              "training.train_metrics=false",
          "data.train_subset=24000",   "data.test_subset=10000",          "training.batch=64",
          "training.epochs=4",         "training.checkpoint_every=50",   "training.eval_every=250"};
}

const std::string kAllreduceJob = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_allreduce.yaml";
const std::string kPsJob = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

// What a run left, read before its directory goes.
struct Finished {
  bool ok = false;             // every process still running at the end exited 0
  double accuracy = 0;         // the (last) chief's
  int newest = -1;             // the newest checkpoint's step
  std::string chief_back;      // the restarted chief's output
  std::string coordinator;     // the coordinator's output
  std::string transcript;
};

// Runs the job; with `lose_chief`, worker 0 is killed once checkpoint 100 is written, and
// started again with the same command once the coordinator says it waits for it.
Finished run_job(const std::string& config, int ps, bool lose_chief) {
  Finished f;
  SupervisedJob job("supervised_chief", [&](const TempDir&) { return config; }, overrides(ps));
  EXPECT_TRUE(job.ready()) << job.coordinator->output();
  std::unique_ptr<Trib> server = ps > 0 ? job.start("ps", 0, "ps0") : nullptr;
  auto worker0 = job.start("worker", 0, "worker0");
  auto worker1 = job.start("worker", 1, "worker1");
  std::vector<Trib*> all{job.coordinator.get(), worker0.get(), worker1.get()};
  if (server) all.push_back(server.get());
  std::vector<Trib*> running = all;
  Trib* chief = worker0.get();
  std::unique_ptr<Trib> worker0_again;
  if (lose_chief) {
    const bool mid_run = wait_until(all, [&] { return newest_checkpoint(job.run) >= 100; }, 180s);
    EXPECT_TRUE(mid_run) << transcript(all);
    if (!mid_run) return f;
    worker0->signal(SIGKILL);
    EXPECT_TRUE(wait_exit(*worker0, 10s, all)) << transcript(all);
    EXPECT_EQ(worker0->exit_code(), 128 + SIGKILL);
    const bool waits = wait_until(all, [&] { return job.coordinator->printed("for worker 0, the chief, to come back"); }, 30s);
    EXPECT_TRUE(waits) << transcript(all);
    if (!waits) return f;
    worker0_again = job.start("worker", 0, "worker0 started again");
    chief = worker0_again.get();
    all.push_back(chief);
    running.erase(std::find(running.begin(), running.end(), worker0.get()));
    running.push_back(chief);
  }
  const bool ended = wait_until(all, [&] { return all_exited(running); }, 420s);
  f.transcript = transcript(all);
  EXPECT_TRUE(ended) << f.transcript;
  if (!ended) return f;
  f.ok = true;
  for (Trib* p : running) {
    EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << f.transcript;
    f.ok = f.ok && p->exit_code() == 0;
  }
  f.accuracy = final_accuracy(chief->output());
  f.newest = newest_checkpoint(job.run);
  f.chief_back = lose_chief ? chief->output() : "";
  f.coordinator = job.coordinator->output();
  return f;
}

// What every lost-chief run shows at the coordinator, and how it ends against the fault-free run.
void expect_waited_for_and_finished(const Finished& clean, const Finished& r) {
  ASSERT_TRUE(clean.ok) << clean.transcript;
  ASSERT_TRUE(r.ok) << r.transcript;
  EXPECT_TRUE(std::regex_search(r.coordinator,
                                std::regex("coordinator: worker 0 at [^ ]+ was lost \\(.*\\); generation [0-9]+: the job "
                                           "waits up to 60 s \\(cluster\\.join_timeout_s\\) for worker 0, the chief, to "
                                           "come back: its node's supervisor starts it again with the same command")))
      << r.transcript;
  EXPECT_TRUE(r.coordinator.find("coordinator: worker 0 (the chief) came back from") != std::string::npos) << r.transcript;
  EXPECT_TRUE(r.coordinator.find("every worker finished") != std::string::npos) << r.transcript;
  EXPECT_EQ(r.coordinator.find("not relaunched in place"), std::string::npos) << r.transcript;
  // The run's end is written by the chief started again: its last checkpoint is the run's last step.
  EXPECT_EQ(clean.newest, 748) << clean.transcript;
  EXPECT_EQ(r.newest, clean.newest) << r.transcript;
  EXPECT_TRUE(loses_at_most(r.accuracy, clean.accuracy, 0.01)) << r.transcript;
}

TEST(SupervisedChief, AllreduceAChiefStartedAgainWithItsCommandJoinsTheRunningGroupAndTheJobFinishes) {
  const Finished clean = run_job(kAllreduceJob, 0, false);
  const Finished r = run_job(kAllreduceJob, 0, true);
  expect_waited_for_and_finished(clean, r);
  // It joined the survivor's group with its variables, as a chief relaunched by the local launcher does.
  EXPECT_TRUE(std::regex_search(r.chief_back, std::regex("joined the allreduce group as generation [0-9]+: rank 0 of 2; "
                                                         "starts at step [0-9]+ with rank 1's variables")))
      << r.transcript;
}

TEST(SupervisedChief, ParameterServersAChiefStartedAgainWithItsCommandRejoinsInPlaceAndTheJobFinishes) {
  const Finished clean = run_job(kPsJob, 1, false);
  const Finished r = run_job(kPsJob, 1, true);
  expect_waited_for_and_finished(clean, r);
  // It rejoined the running job with the server's state (no restore, no rewind), as a chief
  // relaunched by the local launcher does (docs/fault_tolerance.md, "A lost ps chief rejoins in place").
  std::smatch back;
  ASSERT_TRUE(std::regex_search(r.chief_back, back,
                                std::regex("worker 0: relaunched in place of the lost chief; takes the run back at step "
                                           "([0-9]+) \\(the servers' state; newest checkpoint")))
      << r.transcript;
  EXPECT_GE(std::stoi(back[1]), 100);
  EXPECT_TRUE(std::regex_search(r.chief_back, std::regex("worker 0: starts at step " + back[1].str() +
                                                         " with the servers' values")))
      << r.transcript;
  EXPECT_EQ(r.transcript.find("parameter server restore"), std::string::npos) << r.transcript;
}

}  // namespace
}  // namespace trib::testing
