// An allreduce stream job whose lost worker `trib train` relaunches (cluster.max_restarts,
// cluster.stream_rejoin on by default): the survivors re-form and go on from the last step both
// completed (with the lost worker's Kafka progress of it), the relaunched process rejoins the
// running group, and the group of 3 goes on from the group's step, no checkpoint loaded: the
// joiner takes the variables, optimizer state and the members' Kafka progress of the step before
// through the group, and its share of the partitions starts there; no whole-job restart. The per-worker record of applied event ids (data.kafka.record_ids) checks "every
// event once".
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "e2e/stream/allreduce_stream_util.h"
#include "e2e/trib_process.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using namespace stream_e2e;

// kill -9 to worker 2 of 3 25 steps after checkpoint 200 (its own record says when); the
// launcher relaunches it and it rejoins (`fault`: TRIB_TEST_FAULT for the run, or empty). The
// join goes on from the group's step, no checkpoint loaded, and every kept event is trained once
// (expect_rejoined_once). The events arrive live, 100 a second (about 33 steps a second per
// worker), so that the survivors are still training when the relaunched process is ready to
// join: about 20 s.
Rejoined lose_and_rejoin(const std::string& name, const std::map<std::string, std::string>& fault) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  stream::ProduceOptions produce = produce_options(broker.bootstrap());
  produce.rate = 100;
  std::thread producer([&] { stream::produce_events(produce, stop); });
  const fs::path out = testing::fresh_path("stream", name);
  const int steps = 600, every = 100;
  const std::vector<std::string> args = job_args(broker.bootstrap(), out, name, steps, every);
  KillAtStep kill(out, 2, 2 * every + 25);
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(240), kill.on_line(), fault);
  stop = true;
  producer.join();
  EXPECT_TRUE(kill.killed()) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2 relaunched (pid"), std::string::npos) << r.output;
  // One transcript holds every member's lines, each naming its worker.
  const Rejoined at = expect_rejoined_once(out, steps, every, {r.output, r.output, r.output}, r.output);
  fs::remove_all(out);
  return at;
}

TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerTakesItsRelaunchBackExactlyOnce) {
  lose_and_rejoin("allreduce-rejoin", {});
}

// The relaunched worker asks to join only once checkpoint 300 is written (TRIB_TEST_FAULT):
// the survivors went on from a step past 200 and wrote 300 as a group of 2, so the join goes on
// from a step past 300 with the two survivors' progress, which holds the partitions they read
// for the lost worker's share, and their counts (the chief's hold the lost worker's since the
// loss).
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerTakesItsRelaunchBackAfterALaterCheckpointExactlyOnce) {
  const Rejoined at =
      lose_and_rejoin("allreduce-rejoin-later", {{"TRIB_TEST_FAULT", "allreduce-stream-join-after-checkpoint:300"}});
  EXPECT_GT(at.lost_at, 200);
  EXPECT_LT(at.lost_at, 300);
  EXPECT_GE(at.joined_at, 300);
}

// Every worker is held 10 s right after its first rollback from the members' cursors
// (TRIB_TEST_FAULT=allreduce-stream-slow-after-rewind:10): the survivors of the loss wait there
// before their first step as a group of 2, and the relaunched worker (ready within about a
// second) joins meanwhile. The join goes on from the very step the survivors went on from, with
// the loss's table (all 3 workers' progress of the step before, the lost process's counts in
// it, which the joiner takes back: the totals line holds each count once).
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerTakesItsRelaunchBackBeforeTheSurvivorsFirstStepExactlyOnce) {
  const Rejoined at =
      lose_and_rejoin("allreduce-rejoin-early", {{"TRIB_TEST_FAULT", "allreduce-stream-slow-after-rewind:10"}});
  EXPECT_EQ(at.joined_at, at.lost_at);
  EXPECT_EQ(at.join_table, 3);
}

}  // namespace
}  // namespace trib
