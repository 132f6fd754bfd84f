// Elastic parameter-server jobs with real processes (issue 12, "Elastic"): SIGTERM to a worker
// other than the chief makes it leave at a step boundary and exit 0 while the job goes on,
// and `trib scale RUN_DIR --workers N` grows and shrinks a running local job. With
// data.assignment: dynamic every batch of the job is applied once, whoever read it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::Trib;
using testing::TribRun;

const std::string kPs = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

// By default 12,000 examples of 128 a batch: 93 batches an epoch, 4 epochs: 372 batches in all.
std::vector<std::string> job(const fs::path& out, std::vector<std::string> sets, int examples = 12000,
                             int epochs = 4) {
  std::vector<std::string> a = {"train", kPs, "--output", out.string()};
  sets.insert(sets.end(), {"threads.intra=1", "training.train_metrics=false",
                           "data.train_subset=" + std::to_string(examples), "data.test_subset=1000",
                           "training.epochs=" + std::to_string(epochs), "data.assignment=dynamic"});
  for (const std::string& s : sets) {
    a.push_back("--set");
    a.push_back(s);
  }
  return a;
}

int child_pid(const std::string& output, const std::string& name) {
  std::smatch m;
  return std::regex_search(output, m, std::regex(name + " \\(pid ([0-9]+)\\)")) ? std::stoi(m[1]) : -1;
}

void expect_every_batch_applied_once(const std::string& output, int batches = 372) {
  EXPECT_NE(output.find(fmt::format("data: {} of {} batches applied", batches, batches)), std::string::npos) << output;
  EXPECT_NE(output.find(fmt::format(" {} updates", batches)), std::string::npos) << "one update per batch\n" << output;
}

TEST(PsElastic, SigtermToAWorkerMakesItLeaveAtAStepBoundaryAndTheJobGoesOn) {
  fs::path out = testing::fresh_path("elastic", "sigterm_leave");
  bool sent = false;
  TribRun r = run_trib(job(out, {"cluster.workers=3"}), std::chrono::seconds(240), [&](const std::string& line, Trib& p) {
    if (sent || !line.starts_with("[worker1] step ")) return;
    p.pump();
    const int pid = child_pid(p.output(), "worker1");
    ASSERT_GT(pid, 0) << p.output();
    ::kill(pid, SIGTERM);
    sent = true;
  });
  ASSERT_TRUE(sent) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\[worker1\\] step [0-9]+: SIGTERM: worker 1 leaves the job, "
                                                     "which goes on without it")))
      << r.output;
  EXPECT_EQ(r.output.find("the job stops"), std::string::npos) << "no job-wide stop\n" << r.output;
  EXPECT_EQ(r.output.find("worker1 (pid"), r.output.rfind("worker1 (pid")) << "not relaunched\n" << r.output;
  EXPECT_NE(r.output.find("done: test accuracy"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("every process finished"), std::string::npos) << r.output;
  expect_every_batch_applied_once(r.output);
  fs::remove_all(out);
}

// Sync rounds go on with the others; near the end a worker with nothing left to read finishes
// rather than wait for another's chunk (whose round would wait for it in turn).
TEST(PsElastic, ASyncWorkerLeavesOnSigtermAndTheRoundsGoOnWithTheOthers) {
  fs::path out = testing::fresh_path("elastic", "sigterm_sync");
  bool sent = false;
  TribRun r = run_trib(job(out, {"cluster.workers=3", "strategy.mode=sync"}), std::chrono::seconds(240),
                       [&](const std::string& line, Trib& p) {
                         if (sent || !line.starts_with("[worker2] step ")) return;
                         p.pump();
                         const int pid = child_pid(p.output(), "worker2");
                         ASSERT_GT(pid, 0) << p.output();
                         ::kill(pid, SIGTERM);
                         sent = true;
                       });
  ASSERT_TRUE(sent) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\[worker2\\] step [0-9]+: SIGTERM: worker 2 leaves the job")))
      << r.output;
  EXPECT_NE(r.output.find("data: 372 of 372 batches applied"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("done: test accuracy"), std::string::npos) << r.output;
  fs::remove_all(out);
}

// Lost for good (no relaunch): the unread part of its chunk, from the cursor of its last
// applied push, is read by the others.
TEST(PsElastic, AKilledWorkersUnreadDataIsReadByTheOthers) {
  fs::path out = testing::fresh_path("elastic", "killed");
  bool killed = false;
  TribRun r = run_trib(job(out, {"cluster.workers=3", "cluster.max_restarts=0"}), std::chrono::seconds(240),
                       [&](const std::string& line, Trib& p) {
                         if (killed || !line.starts_with("[worker2] step ")) return;
                         p.pump();
                         const int pid = child_pid(p.output(), "worker2");
                         ASSERT_GT(pid, 0) << p.output();
                         ::kill(pid, SIGKILL);
                         killed = true;
                       });
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("it was evicted, and the job goes on without it"), std::string::npos) << r.output;
  expect_every_batch_applied_once(r.output);
  fs::remove_all(out);
}

TEST(PsElastic, TribScaleGrowsAndShrinksARunningLocalJob) {
  fs::path out = testing::fresh_path("elastic", "scale");
  int phase = 0;
  std::unique_ptr<Trib> scale;
  std::string scale_output;
  auto start_scale = [&](int n) {
    scale = std::make_unique<Trib>("scale", std::vector<std::string>{"scale", out.string(), "--workers",
                                                                     std::to_string(n)});
  };
  // 30,000 examples, 234 batches an epoch, 6 epochs: 1,404 batches, long enough for a process
  // to start while the others train (the request goes out as soon as the chief has begun).
  TribRun r = run_trib(job(out, {"cluster.workers=2", "cluster.max_workers=3"}, 30000, 6), std::chrono::seconds(300),
                       [&](const std::string& line, Trib&) {
                         if (scale && scale->exited()) {
                           scale_output += scale->output();
                           EXPECT_EQ(scale->exit_code(), 0) << scale->output();
                           scale.reset();
                         }
                         if (scale) return;
                         if (phase == 0 && line.starts_with("[worker0] run directory: ")) {
                           start_scale(3);
                           phase = 1;
                         } else if (phase == 1 && line.starts_with("[worker2] step ")) {
                           start_scale(1);  // worker2 and worker1 leave; the chief finishes alone
                           phase = 2;
                         }
                       });
  ASSERT_EQ(phase, 2) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: scaling from 2 to 3 worker(s)"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("local cluster: worker2 joins \\(pid [0-9]+\\)"))) << r.output;
  EXPECT_NE(r.output.find("[worker2] worker 2: starts at step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("local cluster: scaling from 3 to 1 worker(s)"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("SIGTERM to worker2 \\(pid [0-9]+\\): it leaves")) ) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("SIGTERM to worker1 \\(pid [0-9]+\\): it leaves"))) << r.output;
  EXPECT_NE(r.output.find("every process finished"), std::string::npos) << r.output;
  expect_every_batch_applied_once(r.output, 1404);
  fs::remove_all(out);
}

TEST(PsElastic, TribScaleRefusesBeyondMaxWorkersAndWithoutARunningJob) {
  fs::path out = testing::fresh_path("elastic", "scale_refused");
  fs::create_directories(out);
  TribRun none = run_trib({"scale", out.string(), "--workers", "2"}, std::chrono::seconds(30));
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.output.find("is not the run directory of a running job"), std::string::npos) << none.output;
  // A run directory whose job admits 3 workers, but no launcher.
  std::string config = testing::tiny_job("cluster: {ps: 1, workers: 2, max_workers: 3}\n");
  config = std::regex_replace(config, std::regex("  train_subset: 2000\n"), "  train_subset: 2000\n  assignment: dynamic\n");
  std::ofstream(out / "config.yaml") << config;
  TribRun beyond = run_trib({"scale", out.string(), "--workers", "4"}, std::chrono::seconds(30));
  EXPECT_NE(beyond.exit_code, 0);
  EXPECT_NE(beyond.output.find("--workers 4: the job in " + out.string() + " runs 1..3 worker(s) (cluster.max_workers)"),
            std::string::npos)
      << beyond.output;
  TribRun nobody = run_trib({"scale", out.string(), "--workers", "3", "--timeout", "1"}, std::chrono::seconds(30));
  EXPECT_NE(nobody.exit_code, 0);
  EXPECT_NE(nobody.output.find("no launcher took the request within 1 s"), std::string::npos) << nobody.output;
  EXPECT_FALSE(fs::exists(out / "scale-request")) << "a request nobody took is not left behind";
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
