// A file job's parameter-server worker lost between its pushes of one step to two servers
// (issue 12: "no example is lost or repeated relative to what the servers applied"). Worker W
// kills itself once server 0 answered its push of step 100, its push of that step to server
// 1 held back (TRIB_TEST_FAULT=stream-worker-lost-between-pushes:W:100, src/app/fault_hooks.cc):
// server 0 applied the batch of step 100, server 1 did not. The relaunched worker resumes at
// the oldest server's data cursor (server 1's: the batch of step 100 is the next it reads),
// reads that batch again and pushes it to both; server 0, whose kept cursor for the worker
// covers it, acknowledges it without applying it (docs/fault_tolerance.md, "File jobs: a ps
// worker lost between its pushes applies each batch once on each server").
//
// The job: 2 servers holding the model's variables between them, 3 workers, 4 epochs of a
// 24,000-example subset: 62 steps an epoch per worker (shard of 8,000, batches of 128), 248
// in all. Step 100 is batch 38 of epoch 1, which starts at cursor 38 * 128 = 4864.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "e2e/run_output.h"
#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::final_accuracy;
using testing::run_trib;
using testing::TribRun;

constexpr int kStep = 100;
constexpr int kSteps = 248;  // per worker

std::vector<std::string> job(const fs::path& out, const std::string& mode) {
  return {"train", std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml", "--output", out.string(), "--set",
          "threads.intra=1", "--set", "training.train_metrics=false", "--set", "data.train_subset=24000", "--set",
          "data.test_subset=10000", "--set", "training.epochs=4", "--set", "cluster.ps=2", "--set",
          "cluster.workers=3", "--set", "strategy.mode=" + mode};
}

// The fault-free run's accuracy, once per mode.
double fault_free_accuracy(const std::string& mode) {
  const fs::path out = testing::fresh_path("faults", "split_push_clean_" + mode);
  const TribRun clean = run_trib(job(out, mode), std::chrono::seconds(180));
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  fs::remove_all(out);
  return final_accuracy(clean.output);
}

// The chief's report line of server p.
std::string report_line(const std::string& output, int p) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(output, m, std::regex(fmt::format(R"(  ps {}: [^\n]*MB in[^\n]*)", p)))) << output;
  return m.empty() ? "" : m[0].str();
}

// Async: every step of the 3 workers applied exactly once on each server.
void expect_each_step_once_on_each_server(const std::string& output) {
  for (int p = 0; p < 2; ++p) {
    const std::string line = report_line(output, p);
    EXPECT_NE(line.find(fmt::format(" {} updates, 0 late dropped", 3 * kSteps)), std::string::npos) << line;
  }
}

// Runs the job losing worker `w` between its pushes of step kStep, and checks what every mode
// shows: both servers hold variables; the lost process said where it died; relaunched once
// (in place, for the chief), no restart, no rollback; the relaunched worker's line naming the
// oldest cursor and the batch of step kStep as where its data resumes; server 0's one replayed
// push acknowledged without applying it, server 1's none; the accuracy of a fault-free run.
// Returns the run, and in `resumed` the step the relaunched worker resumed at.
TribRun run_losing_between_pushes(int w, const std::string& mode, int& resumed) {
  const double clean = fault_free_accuracy(mode);
  const fs::path out = testing::fresh_path("faults", fmt::format("split_push_{}_{}", mode, w));
  const TribRun r = run_trib(job(out, mode), std::chrono::seconds(180), {},
                             {{"TRIB_TEST_FAULT", fmt::format("stream-worker-lost-between-pushes:{}:{}", w, kStep)}});
  fs::remove_all(out);
  resumed = -1;
  EXPECT_NE(r.output.find(fmt::format("TRIB_TEST_FAULT: worker {} is lost after its push of step {} reached ps 0 and "
                                      "not the others",
                                      w, kStep)),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Placement: each server holds part of the model, so each push of a step goes to both.
  std::smatch m;
  for (int p = 0; p < 2; ++p) {
    EXPECT_TRUE(std::regex_search(r.output, m, std::regex(fmt::format(R"(\] ps {}: (\d+) bytes)", p)))) << r.output;
    if (!m.empty()) {
      EXPECT_GT(std::stoll(m[1]), 0) << "no variable on ps " << p;
    }
  }
  EXPECT_TRUE(std::regex_search(r.output, std::regex(fmt::format(R"(worker{} \(pid \d+\) was killed by signal 9[^\n]*; )"
                                                                 R"(relaunching \(1 of 3\))",
                                                                 w))))
      << r.output;
  EXPECT_EQ(r.output.find("relaunching (2 of 3)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("back to step"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rollback(s)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("parameter server restore"), std::string::npos) << r.output;
  // The relaunched worker: the servers' cursors differ, it takes the oldest, where the batch of
  // step kStep begins (batch 38 of epoch 1 in its shard).
  EXPECT_NE(r.output.find(fmt::format("worker {}: its last push reached some servers and not every other: its data "
                                      "resumes at the oldest server's cursor",
                                      w)),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, m,
      std::regex(fmt::format(R"(worker {}: rejoins at step (\d+), data at [^\n]*\bcursor=4864 [^\n]*\bepoch=1 )", w))))
      << r.output;
  if (!m.empty()) resumed = std::stoi(m[1]);
  // Server 0 had that batch: it acknowledged its replay without applying it. Server 1 had not.
  EXPECT_NE(r.output.find(fmt::format("ps 0: worker {}'s push of step {} holds only data this server applied already",
                                      w, resumed)),
            std::string::npos)
      << r.output;
  const std::string ps0 = report_line(r.output, 0), ps1 = report_line(r.output, 1);
  EXPECT_NE(ps0.find(", 1 replayed push(es) acknowledged without applying them"), std::string::npos) << ps0;
  EXPECT_EQ(ps1.find("acknowledged without applying"), std::string::npos) << ps1;
  EXPECT_NE(ps0.find("1 worker(s) lost, 1 re-admitted"), std::string::npos) << ps0;
  EXPECT_NE(ps1.find("1 worker(s) lost, 1 re-admitted"), std::string::npos) << ps1;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), clean, 0.01)) << r.output;
  return r;
}

// Async: the relaunched worker resumes at its own clock on the slower server (step 100) and
// every step of every worker is applied exactly once on each server: 3 x 248 updates each,
// where server 0 applied step 100's batch twice before.
TEST(PsSplitPush, AnAsyncWorkerLostBetweenItsPushesToTwoServersHasEachStepAppliedOnceOnEach) {
  int resumed = -1;
  const TribRun r = run_losing_between_pushes(1, "async", resumed);
  EXPECT_EQ(resumed, kStep) << r.output;
  expect_each_step_once_on_each_server(r.output);
}

// The chief, on the same path: relaunched in place, it rejoins the running job at the oldest
// server's step and cursor, and each server applies each of its steps once.
TEST(PsSplitPush, AnAsyncChiefLostBetweenItsPushesRejoinsInPlaceWithEachStepAppliedOnceOnEach) {
  int resumed = -1;
  const TribRun r = run_losing_between_pushes(0, "async", resumed);
  EXPECT_EQ(resumed, kStep) << r.output;
  EXPECT_NE(r.output.find("relaunching (1 of 3); it rejoins the running job in place"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fmt::format("worker 0: relaunched in place of the lost chief; takes the run back at step {} "
                                      "(the servers' state",
                                      kStep)),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("cannot rejoin the running job in place"), std::string::npos) << r.output;
  expect_each_step_once_on_each_server(r.output);
  const std::size_t done = r.output.find("done: test accuracy");
  EXPECT_NE(done, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("done: test accuracy", done + 1), std::string::npos) << "the report written once\n" << r.output;
}

// Sync: the round of step 100 closed on server 0 with the lost worker's batch and on server 1
// without it. The relaunched worker joins at the job's round with its data at server 1's
// cursor; server 0 takes its replay as its part of that round with nothing added, and server
// 1 applies it: in that round, or, when the worker was re-admitted there while that round was
// open (then it counts from the next), added to the next round rather than dropped as late
// (`late replayed push(es) added to a later round`). Either way no server drops a push as
// late, and every server closes each round once (248).
TEST(PsSplitPush, ASyncWorkerLostBetweenItsPushesHasItsBatchAppliedOnceOnEachServer) {
  int resumed = -1;
  const TribRun r = run_losing_between_pushes(1, "sync", resumed);
  EXPECT_GE(resumed, kStep) << r.output;
  EXPECT_LE(resumed, kSteps) << r.output;
  for (int p = 0; p < 2; ++p) {
    const std::string line = report_line(r.output, p);
    EXPECT_NE(line.find(fmt::format(" {} updates, 0 late dropped", kSteps)), std::string::npos) << line;
  }
  const bool added_later = r.output.find("ps 1: worker 1's replayed push of step ") != std::string::npos;
  std::printf("[ info ] server 1 applied the replay %s\n", added_later ? "in a later round" : "in its round");
  EXPECT_EQ(report_line(r.output, 1).find("1 late replayed push(es) added to a later round") != std::string::npos,
            added_later)
      << r.output;
}

}  // namespace
}  // namespace trib
