// Allreduce stream jobs and the losses the in-place re-forming does not see coming: a second
// worker lost while the survivors roll back (the group re-forms again, in place), and a worker
// lost after its last exchange (the launcher restarts the job whole from its newest
// checkpoint). Test-only hooks (TRIB_TEST_FAULT, app/fault_hooks.h) hold the workers in those
// windows, which a signal from outside could not time. Every event is trained exactly once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <regex>
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

// 3 workers, every one held after the run's last step (before its final Kafka offsets): kill -9
// to worker `lost` there, after its last exchange. Nobody re-forms (no exchange is left to fail);
// the chief cannot write the last checkpoint without its final offsets (worker 2's), or is
// itself gone (worker 0: its relaunched process has no group to join), and the launcher restarts
// the job whole from its newest checkpoint (the failure counts as the loss:
// LocalClusterOptions::lost_process). All 3 workers finish the run; each event once. Returns the
// run's output.
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
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("restarting the job from its newest checkpoint (1 of"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job from its newest checkpoint (2 of"), std::string::npos) << r.output;
  std::smatch m;
  if (!std::regex_search(r.output, m, std::regex(R"(resumed from \S+ckpt-0*(\d+) at step)"))) {
    ADD_FAILURE() << r.output;
    return r.output;
  }
  const std::int64_t checkpoint = std::stoll(m[1]);
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_EQ(checkpoint, steps - every) << "the newest checkpoint before the unwritten last one";
  std::map<std::int64_t, int> seen;
  for (int w = 0; w < 3; ++w) add_kept_ids(out, w, steps, seen, checkpoint);
  expect_kept_once(out, r.output, seen, 3 * steps, steps);
  fs::remove_all(out);
  return r.output;
}

TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerAfterItsLastExchangeRestartsWholeExactlyOnce) {
  const std::string output = lose_after_last_exchange("allreduce-after-last", 2);
  EXPECT_NE(output.find("worker 2 was lost before handing over its final Kafka offsets"), std::string::npos) << output;
}

// The chief lost there (relaunched in place: job-assigned partitions): the survivors have no
// exchange left to re-form in, so its relaunch finds no place in a running group, fails once
// cluster.join_timeout_s (60 s) has passed, and the job restarts whole as before.
TEST(StreamTraining, AnAllreduceJobThatLosesItsChiefAfterItsLastExchangeRestartsWholeExactlyOnce) {
  const std::string output = lose_after_last_exchange("allreduce-chief-after-last", 0);
  EXPECT_NE(output.find("local cluster: worker0 relaunched"), std::string::npos) << output;
  EXPECT_NE(output.find("worker 0: the group's leader gave it no place in the allreduce group within 60 s"),
            std::string::npos)
      << output;
}

}  // namespace
}  // namespace trib
