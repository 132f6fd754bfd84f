// An allreduce stream job whose lost worker `trib train` relaunches (cluster.max_restarts,
// cluster.stream_rejoin on by default), its chief included: the survivors re-form and go on from
// the last step both completed (with the lost worker's Kafka progress of it), the relaunched
// process rejoins the running group, and the group of 3 rolls back to its newest checkpoint, the
// joiner with it (variables and optimizer state through the group, its Kafka share among the
// members at the checkpoint's progress); no whole-job restart. The per-worker record of applied
// event ids (data.kafka.record_ids) checks "every event once".
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

// Where the group went back to: after the loss (lost_at: the step the survivors' group went on
// from; rejoined_at when the loss and the join made one group) and at the join (rejoined_at: the group of 3).
struct Rollbacks {
  std::int64_t lost_at = -1;
  std::int64_t rejoined_at = -1;
  std::string output;  // the run's
};

// kill -9 to worker `lost` of 3 25 steps after checkpoint 200 (its own record says when); the
// launcher relaunches it and it rejoins (`fault`: TRIB_TEST_FAULT for the run, or empty). The
// chief (`lost` 0) takes the run directory back, the lowest survivor leading the group meanwhile.
// Kept events: every worker's up to kept_lost (lost_at, or the join's checkpoint when that is
// earlier: its rollback undid the lost worker's steps after it too), the survivors' from there to
// rejoined_at, all three's after it; each once, and the final checkpoint's offsets and totals hold exactly them.
// Every member's variables after the join's rollback, the joiner's at its first step, are the
// same (crc32c in each member's line). The events arrive live, 100 a second (about 33 steps a
// second per worker), so that the survivors are still training when the relaunched process is
// ready to join: about 20 s.
Rollbacks lose_and_rejoin(const std::string& name, const std::map<std::string, std::string>& fault, int lost = 2) {
  Rollbacks at;
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  stream::ProduceOptions produce = produce_options(broker.bootstrap());
  produce.rate = 100;
  std::thread producer([&] { stream::produce_events(produce, stop); });
  const fs::path out = testing::fresh_path("stream", name);
  const int steps = 600, every = 100;
  const std::vector<std::string> args = job_args(broker.bootstrap(), out, name, steps, every);
  KillAtStep kill(out, lost, 2 * every + 25);
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(240), kill.on_line(), fault);
  stop = true;
  producer.join();
  at.output = r.output;
  EXPECT_TRUE(kill.killed()) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("resumed from"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fmt::format("local cluster: worker{} relaunched (pid", lost)), std::string::npos) << r.output;
  if (lost == 0) {
    // The launcher's line, and the new chief's: it takes the run directory back, in place.
    EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(local cluster: worker0 \(pid \d+\) was killed by signal 9 )"
                                                       R"(\(Killed\); relaunching \(1 of 3\); the others go on)")))
        << r.output;
    EXPECT_NE(r.output.find("[worker0] worker 0: relaunched in place of the lost chief; takes the run back at step"),
              std::string::npos)
        << r.output;
  }
  std::smatch m;
  if (!std::regex_search(r.output, m,
                         std::regex(fmt::format(R"(\[worker{}\] joined the allreduce group as generation (\d+))", lost)))) {
    ADD_FAILURE() << r.output;
    return at;
  }
  const std::string generation = m[1];
  // The group of 3 again, rolled back to a checkpoint: every member prints it, with the
  // variables it goes on from.
  std::string crc;
  for (int w = 0; w < 3; ++w) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    if (!std::regex_search(
            r.output, m,
            std::regex(fmt::format(R"(worker {}: allreduce group {} \(workers 0, 1, 2\) rolled back to checkpoint (\d+) )"
                                   R"(from step \d+ \(\d+ steps to redo\), variables crc32c ([0-9a-f]{{8}}); )",
                                   w, generation)))) {
      ADD_FAILURE() << r.output;
      return at;
    }
    if (w == 0) {
      at.rejoined_at = std::stoll(m[1]);
      crc = m[2];
      std::printf("[ info ] %s\n", m[0].str().c_str());
    }
    EXPECT_EQ(std::stoll(m[1]), at.rejoined_at) << r.output;
    EXPECT_EQ(m[2], crc) << "worker " << w << " goes on from the group's variables";
  }
  // The joiner's share among the members, assigned by the job.
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex(fmt::format(R"(worker {0}: allreduce group {1} \(workers 0, 1, 2\) .*reads partitions {0}, {2} )"
                                       R"(\(assigned by the job\))",
                                       lost, generation, lost + 3))))
      << r.output;
  std::vector<int> survivors;
  for (int w = 0; w < 3; ++w)
    if (w != lost) survivors.push_back(w);
  const std::string survivors_group = fmt::format("(workers {}, {})", survivors[0], survivors[1]);
  at.lost_at = at.rejoined_at;
  if (std::regex_search(r.output, m,
                        std::regex(fmt::format(R"(worker {}: allreduce group \d+ \(workers {}, {}\) goes on from step (\d+) )"
                                               R"(with the Kafka progress of that step of all 3 workers)",
                                               survivors[0], survivors[0], survivors[1])))) {
    at.lost_at = std::stoll(m[1]);
    std::printf("[ info ] %s\n", m[0].str().c_str());
  }
  EXPECT_GE(at.lost_at, 2 * every) << r.output;
  EXPECT_EQ(r.output.find(survivors_group + " rolled back to checkpoint"), std::string::npos)
      << "the survivors go on from their own step, not the checkpoint\n" << r.output;
  // The join rolls back to a checkpoint, which may be before the step the survivors went on
  // from (the loss's group then kept the lost worker's steps after the checkpoint, and the
  // join's rollback undid them).
  const std::int64_t kept_lost = std::min(at.lost_at, at.rejoined_at);
  EXPECT_EQ(at.rejoined_at % every, 0) << r.output;

  std::map<std::int64_t, int> seen;
  for (int w : survivors) add_kept_ids(out, w, steps, seen);
  // The lost process's steps after kept_lost were rolled back; the relaunched one's record
  // starts with a second "run" line.
  add_kept_ids(out, lost, steps, seen, kept_lost);
  expect_kept_once(out, r.output, seen,
                   3 * kept_lost + 2 * (at.rejoined_at - kept_lost) + 3 * (steps - at.rejoined_at), steps);
  fs::remove_all(out);
  return at;
}

TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerTakesItsRelaunchBackExactlyOnce) {
  lose_and_rejoin("allreduce-rejoin", {});
}

// The relaunched worker asks to join only once checkpoint 300 is written (TRIB_TEST_FAULT):
// the survivors went on from a step past 200 and wrote 300 as a group of 2, so the join rolls
// the group of 3 back to 300 or later, the checkpoint's progress holding partitions the two survivors
// read for the lost worker's share.
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerTakesItsRelaunchBackAfterALaterCheckpointExactlyOnce) {
  const Rollbacks at =
      lose_and_rejoin("allreduce-rejoin-later", {{"TRIB_TEST_FAULT", "allreduce-stream-join-after-checkpoint:300"}});
  EXPECT_GT(at.lost_at, 200);
  EXPECT_LT(at.lost_at, 300);
  EXPECT_GE(at.rejoined_at, 300);
}

// kill -9 to the chief (worker 0) 25 steps after checkpoint 200: it is not a whole-job restart
// any more (the behaviour changed on purpose, issue 12). The survivors go on without it, worker 1
// leading, and write no checkpoint meanwhile; the launcher relaunches worker 0, which takes the
// run directory back and joins their running group; every event once, the final checkpoint and
// the totals line (the new chief's) holding exactly the kept ones.
TEST(StreamTraining, AnAllreduceJobThatLosesItsChiefRelaunchesItInPlaceExactlyOnce) {
  lose_and_rejoin("allreduce-chief", {}, 0);
}

// The relaunched chief asks to join only once worker 1's record has step 330
// (TRIB_TEST_FAULT=allreduce-stream-join-after-step:330): the survivors pass checkpoint step 300
// without it, write no checkpoint there and do not wait for it (each says so), and the join rolls
// the group of 3 back to checkpoint 200, the newest, every event once.
TEST(StreamTraining, AnAllreduceJobThatLosesItsChiefGoesOnPastACheckpointStepWithoutItExactlyOnce) {
  const Rollbacks at =
      lose_and_rejoin("allreduce-chief-later", {{"TRIB_TEST_FAULT", "allreduce-stream-join-after-step:330"}}, 0);
  EXPECT_GT(at.lost_at, 200);
  EXPECT_LT(at.lost_at, 300);
  EXPECT_EQ(at.rejoined_at, 200);
  for (int w : {1, 2})
    EXPECT_NE(at.output.find(fmt::format("[worker{}] step 300: no checkpoint: the chief was lost and has not joined the "
                                         "group again yet",
                                         w)),
              std::string::npos)
        << at.output;
}

}  // namespace
}  // namespace trib
