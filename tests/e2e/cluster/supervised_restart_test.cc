// Recovery under any supervisor (issue 12): a multi-host job run as separate `trib
// coordinator`, `trib ps --join` and `trib worker --join` processes on loopback, with the test
// acting as the supervisor (systemd, Kubernetes, a script): each lost process is started again
// with the very command that started it. A relaunched worker rejoins at the servers' values; a
// relaunched parameter server rejoins and the chief restores the whole job from its newest
// checkpoint, as under the local launcher. A lost chief is waited for (supervised_chief_test.cc);
// one not back within cluster.join_timeout_s ends the job with one line saying how to resume.
#include <signal.h>

#include <optional>

#include "e2e/cluster/supervised_job.h"

namespace trib::testing {
namespace {

// 2 servers and 2 async workers, long enough to lose and relaunch members mid-run.
std::unique_ptr<SupervisedJob> tiny_ps_job(int steps, const std::vector<std::string>& more = {}) {
  std::vector<std::string> overrides{fmt::format("training.steps={}", steps), "training.eval_every=1000000",
                                     "training.checkpoint_every=100"};
  overrides.insert(overrides.end(), more.begin(), more.end());
  return std::make_unique<SupervisedJob>("supervised_restart", tiny_ps_config, overrides);
}

TEST(SupervisedRestart, AWorkerAndAServerRelaunchedByTheSameCommandRejoinAndTheChiefRestoresTheJob) {
  std::unique_ptr<SupervisedJob> owned = tiny_ps_job(5000);
  SupervisedJob& job = *owned;
  ASSERT_TRUE(job.ready()) << job.coordinator->output();
  auto ps0 = job.start("ps", 0, "ps0");
  auto ps1 = job.start("ps", 1, "ps1");
  auto worker0 = job.start("worker", 0, "worker0");
  auto worker1 = job.start("worker", 1, "worker1");
  std::vector<Trib*> all{job.coordinator.get(), ps0.get(), ps1.get(), worker0.get(), worker1.get()};

  // Worker 1 is lost once a checkpoint exists and it has applied a step of its own (a worker
  // relaunched at step 0 simply starts), and started again.
  ASSERT_TRUE(wait_until(all, [&] { return newest_checkpoint(job.run) >= 100 && worker1->printed("step 1/"); }, 120s))
      << transcript(all);
  worker1->signal(SIGKILL);
  ASSERT_TRUE(wait_exit(*worker1, 10s, all)) << transcript(all);
  auto worker1b = job.start("worker", 1, "worker1 relaunched");
  all.push_back(worker1b.get());
  ASSERT_TRUE(wait_until(all, [&] { return worker1b->printed("worker 1: starts at step"); }, 60s)) << transcript(all);

  // Then server 1, once the job has gone on to a newer checkpoint.
  const int before = newest_checkpoint(job.run);
  ASSERT_TRUE(wait_until(all, [&] { return newest_checkpoint(job.run) > before; }, 120s)) << transcript(all);
  ps1->signal(SIGKILL);
  ASSERT_TRUE(wait_exit(*ps1, 10s, all)) << transcript(all);
  auto ps1b = job.start("ps", 1, "ps1 relaunched");
  all.push_back(ps1b.get());

  std::vector<Trib*> running{job.coordinator.get(), ps0.get(), ps1b.get(), worker0.get(), worker1b.get()};
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(running); }, 300s)) << transcript(all);
  const std::string out = transcript(all);
  for (Trib* p : running) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;
  EXPECT_TRUE(job.coordinator->printed("every worker finished")) << out;
  // The relaunched server took index 1 again, and the chief restored every server from a
  // checkpoint of this run; the other worker rewound to it too.
  EXPECT_TRUE(ps1b->printed("ps 1 serving at 127.0.0.1:")) << out;
  const std::string step = worker0->find(
      "worker 0: parameter server restore: ps 1 lost; every server reloaded checkpoint " + job.run.string() +
      "/checkpoints/ckpt-[0-9]+ \\(step ([0-9]+)\\) in generation [0-9]+");
  ASSERT_FALSE(step.empty()) << out;
  EXPECT_GE(std::stoi(step), before) << out;
  EXPECT_TRUE(worker0->printed("parameter server restores: 1")) << out;
  EXPECT_TRUE(worker1b->printed("worker 1: parameter server restore (ps 1 lost) from " + job.run.string() +
                                "/checkpoints/ckpt-" + step + "; back to step " + step))
      << out;
  EXPECT_TRUE(worker0->printed("done: test accuracy")) << out;
}

// The bound on the wait for a lost chief: nobody starts worker 0 again within
// cluster.join_timeout_s (3 s here), and the job ends with one line saying how to resume it.
TEST(SupervisedRestart, AChiefNotBackWithinTheJoinTimeoutEndsTheJobWithOneLineSayingHowToResume) {
  std::unique_ptr<SupervisedJob> owned = tiny_ps_job(200000, {"cluster.join_timeout_s=3"});
  SupervisedJob& job = *owned;
  ASSERT_TRUE(job.ready()) << job.coordinator->output();
  auto ps0 = job.start("ps", 0, "ps0");
  auto ps1 = job.start("ps", 1, "ps1");
  // The workers wait cluster.join_timeout_s for the servers' addresses too: once they serve.
  ASSERT_TRUE(wait_until({ps0.get(), ps1.get()}, [&] { return ps0->printed("serving at") && ps1->printed("serving at"); },
                         60s))
      << transcript({ps0.get(), ps1.get()});
  auto worker0 = job.start("worker", 0, "worker0");
  auto worker1 = job.start("worker", 1, "worker1");
  std::vector<Trib*> all{job.coordinator.get(), ps0.get(), ps1.get(), worker0.get(), worker1.get()};
  ASSERT_TRUE(wait_until(all, [&] { return newest_checkpoint(job.run) >= 100; }, 120s)) << transcript(all);
  worker0->signal(SIGKILL);
  std::vector<Trib*> others{job.coordinator.get(), ps0.get(), ps1.get(), worker1.get()};
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(others); }, 60s)) << transcript(all);
  const std::string out = transcript(all);
  EXPECT_NE(job.coordinator->exit_code(), 0) << out;
  // It was waited for first, then given up on.
  EXPECT_TRUE(job.coordinator->printed("the job waits up to 3 s (cluster.join_timeout_s) for worker 0, the chief, to "
                                       "come back"))
      << out;
  EXPECT_TRUE(std::regex_search(job.coordinator->output(),
                                std::regex("the job failed: worker 0 at [^ ]+ was lost: .*; it is the chief, and it did "
                                           "not come back within 3 s \\(cluster\\.join_timeout_s\\), so the job ends: "
                                           "resume it from its newest checkpoint with --resume " +
                                           job.run.string())))
      << out;
}

// A chief that fails with an error (here: its run directory already holds another run) would
// fail the same way if started again: it says so before it exits, and the coordinator ends the
// job at once with its error instead of waiting cluster.join_timeout_s (60 s) for it.
TEST(SupervisedRestart, AChiefThatFailsWithAnErrorEndsTheJobAtOnceNamingIt) {
  std::unique_ptr<SupervisedJob> owned = tiny_ps_job(200000);
  SupervisedJob& job = *owned;
  fs::create_directories(job.run);
  job.dir.file("run/metrics.jsonl", "{}\n");
  ASSERT_TRUE(job.ready()) << job.coordinator->output();
  auto ps0 = job.start("ps", 0, "ps0");
  auto ps1 = job.start("ps", 1, "ps1");
  auto worker0 = job.start("worker", 0, "worker0");
  auto worker1 = job.start("worker", 1, "worker1");
  std::vector<Trib*> all{job.coordinator.get(), ps0.get(), ps1.get(), worker0.get(), worker1.get()};
  // Well within the 60 s the coordinator would wait for a chief that was killed.
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(all); }, 40s)) << transcript(all);
  const std::string out = transcript(all);
  EXPECT_NE(worker0->exit_code(), 0) << out;
  EXPECT_NE(job.coordinator->exit_code(), 0) << out;
  EXPECT_EQ(job.coordinator->output().find("for worker 0, the chief, to come back"), std::string::npos) << out;
  EXPECT_TRUE(job.coordinator->printed("it is the chief, which failed with an error (output directory '" +
                                       job.run.string() + "' already exists and is not empty"))
      << out;
  EXPECT_TRUE(job.coordinator->printed("that a restart would repeat, so the job ends: resume it from its newest "
                                       "checkpoint with --resume " + job.run.string()))
      << out;
}

}  // namespace
}  // namespace trib::testing
