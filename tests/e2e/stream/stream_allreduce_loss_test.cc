// An allreduce stream job that loses a worker: the survivors re-form their group in place, roll
// back to the last step every one of them completed (variables and optimizer state through the
// group) with the Kafka progress of that step of every worker that took it, the lost worker's
// included (data.kafka.share_cursors), and go on with one worker fewer; no process restarts.
// The per-worker record of applied event ids (data.kafka.record_ids) checks "every event once".
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <thread>
#include <string>
#include <vector>

#include "e2e/stream/allreduce_stream_util.h"
#include "e2e/trib_process.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using namespace stream_e2e;

// kill -9 to worker 2 of 3 25 steps after checkpoint 200, 375 steps before the end, with
// cluster.max_restarts: 0 (not relaunched): the survivors re-form as a group of 2, go back to
// the last step both completed (at most one undone, nothing back to the checkpoint) and finish
// the run. Kept events: every worker's up to that step, the survivors' after it; each once, and
// the final checkpoint's offsets hold exactly them (events are numbered from offset 0).
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerReformsInPlaceExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  produce_all(broker.bootstrap());
  const fs::path out = testing::fresh_path("stream", "allreduce-reform");
  const int steps = 600, every = 100;
  std::vector<std::string> args = job_args(broker.bootstrap(), out, "allreduce-reform", steps, every);
  args.insert(args.end(), {"--set", "cluster.max_restarts=0"});  // the N-1 path: no relaunch
  KillAtStep kill(out, 2, 2 * every + 25);
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(180), kill.on_line());
  ASSERT_TRUE(kill.killed()) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker2 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the job goes on without it"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolled back to checkpoint"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolls back to the newest checkpoint"), std::string::npos) << r.output;
  // The strategy's rollback: the step every survivor completed, and how many it undid.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(with 2 workers \(was 3; this one rank 0\); back to step (\d+) \((\d+) step\(s\) undone\))")))
      << r.output;
  const std::int64_t back = std::stoll(m[1]);
  EXPECT_LE(std::stoll(m[2]), 1) << r.output;
  // The stream hook goes on from that very step, with all 3 workers' progress of it.
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1\) goes on from step (\d+) with the Kafka progress of that step of all 3 workers that took it, lost ones included, variables crc32c ([0-9a-f]{8}))")))
      << r.output;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  const std::int64_t step = std::stoll(m[1]);
  const std::string crc = m[2];
  EXPECT_EQ(step, back) << r.output;
  EXPECT_GT(step, 2 * every) << "past the checkpoint the job no longer goes back to\n" << r.output;
  EXPECT_LT(step, 3 * every) << r.output;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 1: allreduce group \d+ \(workers 0, 1\) goes on from step (\d+) .*variables crc32c ([0-9a-f]{8}))")))
      << r.output;
  EXPECT_EQ(std::stoll(m[1]), step) << r.output;
  EXPECT_EQ(m[2].str(), crc) << "both survivors go on from the same variables\n" << r.output;
  // The job, not a consumer-group rebalance, moved worker 2's partitions: at once, at the
  // rollback, half each.
  EXPECT_NE(r.output.find("reads partitions 0, 2, 4 (assigned by the job)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reads partitions 1, 3, 5 (assigned by the job)"), std::string::npos) << r.output;

  std::map<std::int64_t, int> seen;
  add_kept_ids(out, 0, steps, seen);
  add_kept_ids(out, 1, steps, seen);
  add_kept_ids(out, 2, step, seen);  // the lost worker's steps up to where the group went on
  expect_kept_once(out, r.output, seen, 3 * step + 2 * (steps - step), steps);
  fs::remove_all(out);
}

// On the consumer group (data.kafka.assignment: group) the chief (worker 0, which owns the
// checkpoints and the Kafka commits) is not recovered in place: the whole job restarts from its
// newest checkpoint, with all 3 workers, exactly once. (With the job assigning the partitions,
// the default, it is relaunched in place: stream_allreduce_rejoin_test.cc.)
TEST(StreamTraining, AnAllreduceJobThatLosesItsChiefOnTheConsumerGroupRestartsWholeExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  produce_all(broker.bootstrap());
  const fs::path out = testing::fresh_path("stream", "allreduce-chief-group");
  const int steps = 600, every = 100;
  KillAtStep kill(out, 0, 2 * every + 25);
  std::vector<std::string> args = job_args(broker.bootstrap(), out, "allreduce-chief-group", steps, every);
  args.insert(args.end(), {"--set", "data.kafka.assignment=group"});
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(180), kill.on_line());
  ASSERT_TRUE(kill.killed()) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a stream job restarts all its processes from the newest checkpoint when it loses its chief"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("restarting the job from its newest checkpoint (1 of 3)"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(resumed from \S+ckpt-0*(\d+) at step)"))) << r.output;
  const std::int64_t checkpoint = std::stoll(m[1]);
  std::map<std::int64_t, int> seen;
  for (int w = 0; w < 3; ++w) add_kept_ids(out, w, steps, seen, checkpoint);
  expect_kept_once(out, r.output, seen, 3 * steps, steps);
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
