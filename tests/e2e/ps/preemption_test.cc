// Preemption of a local cluster (issue 12): SIGTERM to the launcher, to the chief or to a
// parameter server (or to any worker of an allreduce job) makes the job write a checkpoint at a step boundary and every process
// exit 0; `--resume` continues from that checkpoint's step.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::newest_checkpoint;
using testing::run_trib;
using testing::TribRun;

const std::string kPs = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

std::vector<std::string> job(std::vector<std::string> a, const std::vector<std::string>& more = {}) {
  for (const char* s : {"threads.intra=1", "training.train_metrics=false", "data.train_subset=4000",
                        "data.test_subset=500", "training.steps=2500", "training.checkpoint_every=20",
                        "training.eval_every=2500", "cluster.preemption_grace_s=60"}) {
    a.push_back("--set");
    a.push_back(s);
  }
  for (const std::string& s : more) {
    a.push_back("--set");
    a.push_back(s);
  }
  return a;
}

// The pid the launcher printed for a child ("worker1 (pid 123)").
int child_pid(const std::string& output, const std::string& name) {
  std::smatch m;
  return std::regex_search(output, m, std::regex(name + " \\(pid ([0-9]+)\\)")) ? std::stoi(m[1]) : -1;
}

// Runs the job, sends SIGTERM to `target` ("" for the launcher) once the first checkpoint is
// there, and checks the clean stop; then resumes it and checks where it continues.
void preempt_and_resume(const std::string& name, const std::string& target, const std::vector<std::string>& more = {}) {
  fs::path out = testing::fresh_path("preempt", name);
  bool sent = false;
  TribRun first = run_trib(job({"train", kPs, "--output", out.string()}, more), std::chrono::seconds(300),
                           [&](const std::string&, testing::Trib& p) {
                             if (sent || newest_checkpoint(out) < 20) return;
                             sent = true;
                             if (target.empty()) {
                               p.signal(SIGTERM);
                             } else {
                               p.pump();
                               int pid = child_pid(p.output(), target);
                               ASSERT_GT(pid, 0) << p.output();
                               ::kill(pid, SIGTERM);
                             }
                           });
  ASSERT_TRUE(sent) << first.output;
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("every process finished"), std::string::npos) << first.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(first.output, m, std::regex("\\[worker0\\] step ([0-9]+): the job stops")))
      << first.output;
  const int stopped = std::stoi(m[1]);
  ASSERT_LT(stopped, 2500) << first.output;
  EXPECT_EQ(newest_checkpoint(out), stopped) << first.output;

  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  TribRun second = run_trib(job({"train", kPs, "--resume", out.string()}, more), std::chrono::seconds(300));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  ASSERT_TRUE(std::regex_search(second.output, m, std::regex("resumed from \\S+ at step ([0-9]+)"))) << second.output;
  EXPECT_EQ(std::stoi(m[1]), stopped) << second.output;
  EXPECT_EQ(newest_checkpoint(out), 2500);
  fs::remove_all(out);
}

TEST(Preemption, SigtermToTheLauncherCheckpointsAndEveryProcessExitsZero) { preempt_and_resume("launcher", ""); }

// SIGTERM to the chief stops the job. (To another worker of a parameter-server job it is that
// worker's own leave, and the job goes on: tests/faults/ps/scale_test.cc.)
TEST(Preemption, SigtermToTheChiefCheckpointsTheJob) { preempt_and_resume("worker", "worker0"); }

TEST(Preemption, SigtermToAParameterServerCheckpointsTheJob) { preempt_and_resume("ps", "ps0"); }

TEST(Preemption, SyncWorkersStopTogether) { preempt_and_resume("sync", "", {"strategy.mode=sync"}); }

TEST(Preemption, AllreduceWorkersAgreeOnTheStepToStopAt) {
  preempt_and_resume("allreduce", "worker1", {"strategy.name=allreduce", "cluster.ps=0"});
}

// Ctrl-C keeps its meaning: the cluster stops at once (exit 130), no checkpoint first.
TEST(Preemption, SigintToTheLauncherStillStopsAtOnce) {
  fs::path out = testing::fresh_path("preempt", "sigint");
  bool sent = false;
  TribRun r = run_trib(job({"train", kPs, "--output", out.string()}), std::chrono::seconds(300),
                       [&](const std::string&, testing::Trib& p) {
                         if (!sent && newest_checkpoint(out) >= 20) {
                           p.signal(SIGINT);
                           sent = true;
                         }
                       });
  ASSERT_TRUE(sent) << r.output;
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_EQ(r.output.find("stopping here"), std::string::npos) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
