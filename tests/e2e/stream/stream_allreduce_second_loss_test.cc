// Allreduce stream jobs and the losses the in-place re-forming does not see coming: a second
// worker lost while the survivors roll back (the group re-forms again, in place), and a worker
// or the chief lost after the last exchange (nothing restarts: the last step's shared cursors
// hold the final offsets). Test-only hooks (TRIB_TEST_FAULT, app/fault_hooks.h) hold the workers in those
// windows, which a signal from outside could not time. Every event is trained exactly once.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/stream/allreduce_stream_util.h"
#include "e2e/trib_process.h"
#include "trib/stream/mock_broker.h"

namespace trib {
namespace {

using namespace stream_e2e;

// 4 workers: kill -9 to worker 3 25 steps after checkpoint 200; the survivors (0, 1, 2)
// re-form and are held inside their rollback (after taking the group's state and merging the
// workers' Kafka progress of the step they go back to, before their Kafka rewind), where worker 2
// is killed too. Workers 0 and 1 give way at the rewind's rendezvous, their next exchange fails,
// and they re-form again as (0, 1), back to the same step, with the same progress (all 4
// workers' of that step: nothing was applied between the losses); no process restarts. Kept
// events: all 4 workers' up to that step, workers 0 and 1's after it; each once, and the final
// checkpoint's offsets hold exactly them.
TEST(StreamTraining, AnAllreduceJobThatLosesASecondWorkerDuringItsRollbackReformsAgainExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 8}}});
  produce_all(broker.bootstrap());
  const fs::path out = testing::fresh_path("stream", "allreduce-second-loss");
  const int steps = 600, every = 100;
  const TwoLosses losses =
      run_losing_two(broker.bootstrap(), out, "allreduce-second-loss", steps, every, 2, "allreduce-stream-slow-in-rewind:6");
  const testing::TribRun& r = losses.run;
  ASSERT_TRUE(losses.lost3) << r.output;
  ASSERT_TRUE(losses.lost_second) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolled back to checkpoint"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker 0: a member of allreduce group"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1, 2\) goes on from step (\d+) with the Kafka progress of that step of all 4 workers)")))
      << r.output;
  const std::int64_t step = std::stoll(m[1]);
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1\) goes on from step (\d+) with the Kafka progress of that step of all 4 workers)")))
      << r.output;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_EQ(std::stoll(m[1]), step) << "no step applied between the two losses";
  EXPECT_GT(step, 2 * every) << r.output;
  EXPECT_LT(step, 3 * every) << r.output;
  // Each group went back at most the one step its strategy undid.
  for (const std::string workers : {"3 workers \\(was 4", "2 workers \\(was 3"}) {
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex("with " + workers + R"(; this one rank 0\); back to step (\d+) \((\d+) step\(s\) undone\))")))
        << r.output;
    EXPECT_EQ(std::stoll(m[1]), step) << r.output;
    EXPECT_LE(std::stoll(m[2]), 1) << r.output;
  }
  EXPECT_NE(r.output.find("worker 1: allreduce group"), std::string::npos) << r.output;

  std::map<std::int64_t, int> seen;
  add_kept_ids(out, 0, steps, seen);
  add_kept_ids(out, 1, steps, seen);
  add_kept_ids(out, 2, step, seen);  // the lost workers' steps after that step were rolled back
  add_kept_ids(out, 3, step, seen);
  expect_kept_once(out, r.output, seen, 4 * step + 2 * (steps - step), steps);
  fs::remove_all(out);
}

// Prints the lines of `output` that hold any of `phrases` (the lines a run's end is read by).
void print_lines_with(const std::string& output, const std::vector<std::string>& phrases) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (std::any_of(phrases.begin(), phrases.end(), [&](const std::string& p) { return line.find(p) != std::string::npos; }))
      std::printf("[ info ] %s\n", line.c_str());
}

// 3 workers, every one held after the run's last step (before its final Kafka offsets): kill -9
// to worker `lost` there, after its last exchange. Nobody re-forms (no exchange is left to
// fail), and nothing restarts: every member applied every step, and the group shared every
// member's cursor of the last one in that exchange, so the chief takes a lost worker's final
// offsets and counts from there, or the survivors hand a lost chief's relaunched process the
// final state. The run ends well, its last checkpoint written at its last step; each event once.
// Returns the run's output.
std::string lose_after_last_exchange(const std::string& name, int lost) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  produce_all(broker.bootstrap());
  const fs::path out = testing::fresh_path("stream", name);
  const int steps = 600, every = 100;
  // The job assigns the partitions: no group rebalance runs while the chief closes its
  // consumer. (With the consumer group assigning them, closing during the rebalance for
  // worker 2's expired session could abort inside librdkafka: rd_kafka_cgrp_terminated.)
  const std::vector<std::string> args = job_args(broker.bootstrap(), out, name, steps, every);
  pid_t victim = 0;
  bool killed = false;
  const std::string held = "TRIB_TEST_FAULT: worker " + std::to_string(lost) + " is held";
  testing::TribRun r = testing::run_trib(
      args, std::chrono::seconds(240),
      [&](const std::string& line, testing::Trib&) {
        if (victim == 0) victim = started_pid(line, lost);  // the first incarnation's
        if (!killed && victim != 0 && line.find(held) != std::string::npos) killed = ::kill(victim, SIGKILL) == 0;
      },
      {{"TRIB_TEST_FAULT", "allreduce-stream-slow-after-last-step:6"}});
  EXPECT_TRUE(killed) << r.output;
  print_lines_with(r.output, {"last exchange", "run ended", "relaunched (pid"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("resumed from"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fmt::format("local cluster: worker{} relaunched", lost)), std::string::npos) << r.output;
  // No re-forming, no rollback: the group's last step stands.
  EXPECT_EQ(r.output.find("goes on from step"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolled back to checkpoint"), std::string::npos) << r.output;
  // Every worker's events of every step, the lost process's included (its record's lines up
  // to the last step; a relaunched process adds a "run" line and trains nothing).
  std::map<std::int64_t, int> seen;
  for (int w = 0; w < 3; ++w) add_kept_ids(out, w, steps, seen, steps);
  expect_kept_once(out, r.output, seen, 3 * steps, steps);
  fs::remove_all(out);
  return r.output;
}

// Worker 2 lost there: the chief takes its final offsets and counts from its cursor of the last
// step; its relaunched process finds the run's end written and ends well without joining.
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerAfterItsLastExchangeEndsWithoutARestartExactlyOnce) {
  const std::string output = lose_after_last_exchange("allreduce-after-last", 2);
  EXPECT_NE(output.find("worker 0: worker 2 was lost after the run's last exchange, before handing over its final "
                        "Kafka offsets: the last checkpoint takes them from its cursor of step 600"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("worker 2: the run ended (its chief wrote the last checkpoint and report) before this "
                        "relaunched process could join the allreduce group"),
            std::string::npos)
      << output;
}

// The chief lost there (relaunched in place: job-assigned partitions): the survivors, waiting
// for the last checkpoint, re-form without it and hand its relaunched process the final state
// (variables, optimizer state, every member's cursor of the last step), as a file job's do; it
// writes the last checkpoint and the totals. No 60 s wait for a place in a group.
TEST(StreamTraining, AnAllreduceJobThatLosesItsChiefAfterItsLastExchangeHandsItTheFinalStateExactlyOnce) {
  const std::string output = lose_after_last_exchange("allreduce-chief-after-last", 0);
  EXPECT_EQ(output.find("gave it no place in the allreduce group"), std::string::npos) << output;
  for (int w : {1, 2})
    EXPECT_NE(output.find(fmt::format("worker {}: the chief was lost after the run's last exchange, before the last "
                                      "checkpoint: its relaunched process takes the final state",
                                      w)),
              std::string::npos)
        << output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m,
                                std::regex(R"(joined the allreduce group as generation \d+: rank 0 of 3; starts at step 600 )"
                                           R"(with rank \d+'s variables \(crc32c ([0-9a-f]{8})\))")))
      << output;
  const std::string crc = m[1];
  ASSERT_TRUE(std::regex_search(output, m,
                                std::regex(R"(worker 0: took the final state from the group after the run's last step: )"
                                           R"(the last checkpoint holds the Kafka progress and counts of step 600 of all 3 )"
                                           R"(workers, shared in their last exchange, variables crc32c ([0-9a-f]{8}))")))
      << output;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_EQ(m[1], crc) << output;
}

// A second loss while the chief is away at the run's end: 3 workers held after the last step
// (TRIB_TEST_FAULT=allreduce-stream-end-chief-join-held:6), kill -9 to the chief there; once
// worker 2 says it hands the relaunched chief the final state, kill -9 to worker 2 too, and only
// then may the chief's relaunch ask to join (the fault holds it until the test's marker file).
// What must hold: worker 1 re-forms without both (its table still holds all 3 workers' cursors
// of the last step) and hands the relaunched chief the final state; nothing restarts; the last
// checkpoint holds every event of the 3 workers' 600 steps, each applied exactly once, and so do
// the totals. Worker 2's relaunch, if it comes in time, joins at the run's end too and leaves.
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerWhileItsChiefIsAwayAtTheRunsEndHandsTheChiefTheFinalStateExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  produce_all(broker.bootstrap());
  const fs::path out = testing::fresh_path("stream", "allreduce-end-second-loss");
  const int steps = 600, every = 100;
  const std::vector<std::string> args = job_args(broker.bootstrap(), out, "allreduce-end-second-loss", steps, every);
  pid_t chief = 0, worker2 = 0;
  bool chief_killed = false, worker2_killed = false;
  testing::TribRun r = testing::run_trib(
      args, std::chrono::seconds(240),
      [&](const std::string& line, testing::Trib&) {
        if (chief == 0) chief = started_pid(line, 0);
        if (worker2 == 0) worker2 = started_pid(line, 2);
        if (!chief_killed && chief != 0 && line.find("TRIB_TEST_FAULT: worker 0 is held") != std::string::npos)
          chief_killed = ::kill(chief, SIGKILL) == 0;
        if (chief_killed && !worker2_killed && worker2 != 0 &&
            line.find("worker 2: the chief was lost after the run's last exchange") != std::string::npos) {
          worker2_killed = ::kill(worker2, SIGKILL) == 0;
          std::ofstream(out / "test-release-chief-join") << "1\n";
        }
      },
      {{"TRIB_TEST_FAULT", "allreduce-stream-end-chief-join-held:6"}});
  ASSERT_TRUE(chief_killed) << r.output;
  ASSERT_TRUE(worker2_killed) << r.output;
  print_lines_with(r.output, {"last exchange", "final state", "run ended", "relaunched (pid", "allreduce group generation"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("resumed from"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolled back to checkpoint"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker 1: the relaunched chief took the final state"), std::string::npos) << r.output;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.output, m,
                                std::regex(R"(worker 0: took the final state from the group after the run's last step: )"
                                           R"(the last checkpoint holds the Kafka progress and counts of step 600 of all 3 )"
                                           R"(workers)")))
      << r.output;
  std::map<std::int64_t, int> seen;
  for (int w = 0; w < 3; ++w) add_kept_ids(out, w, steps, seen, steps);
  expect_kept_once(out, r.output, seen, 3 * steps, steps);
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
