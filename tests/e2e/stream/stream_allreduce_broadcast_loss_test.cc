// An allreduce stream job that loses a second worker while the survivors' rollback broadcasts
// the checkpoint's state (UpdateStrategy::start inside StreamHooks::on_regroup): the broadcast
// fails on the survivors, and they re-form again, in place, as a failed exchange would make
// them. A test-only hook (TRIB_TEST_FAULT, app/fault_hooks.h) holds the worker just before that
// broadcast, a window of milliseconds that a signal from outside could not time. The job shares
// no cursors (data.kafka.share_cursors: false), so that its groups roll back to the checkpoint
// (the same path as one that loses a worker before its members' cursors are known).
#include <gtest/gtest.h>

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
// re-form, and worker 1 is held just before the broadcast of the checkpoint's state, where it
// is killed while workers 0 and 2 wait for it inside that broadcast (a chain from worker 0
// through 1 to 2: the root's send and worker 2's receive both fail). Workers 0 and 2 re-form
// again as (0, 2), back to the same checkpoint; no process restarts. Kept events: all 4
// workers' up to the checkpoint, workers 0 and 2's after it; each once, and the final
// checkpoint's offsets hold exactly them.
TEST(StreamTraining, AnAllreduceJobThatLosesASecondWorkerDuringItsRollbackBroadcastReformsAgainExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 8}}});
  produce_all(broker.bootstrap());
  const fs::path out = testing::fresh_path("stream", "allreduce-broadcast-loss");
  const int steps = 600, every = 100;
  const TwoLosses losses = run_losing_two(broker.bootstrap(), out, "allreduce-broadcast-loss", steps, every, 1,
                                          "allreduce-stream-held-before-broadcast:1", {"data.kafka.share_cursors=false"});
  const testing::TribRun& r = losses.run;
  ASSERT_TRUE(losses.lost3) << r.output;
  ASSERT_TRUE(losses.lost_second) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  for (int w : {0, 2})
    EXPECT_TRUE(std::regex_search(r.output, std::regex("worker " + std::to_string(w) +
                                                       R"(: a member of allreduce group \d+ was lost during the )"
                                                       R"(broadcast of its checkpoint's state)")))
        << "worker " << w << " did not say its rollback's broadcast failed\n"
        << r.output;
  EXPECT_EQ(r.output.find("goes on from step"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1, 2\) rolled back to checkpoint (\d+))")))
      << r.output;
  const std::int64_t checkpoint = std::stoll(m[1]);
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 2\) rolled back to checkpoint (\d+) from step \d+)")))
      << r.output;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_EQ(std::stoll(m[1]), checkpoint) << "no checkpoint between the two losses";
  EXPECT_GE(checkpoint, 2 * every) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(worker 2: allreduce group \d+ \(workers 0, 2\) rolled back)")))
      << r.output;

  std::map<std::int64_t, int> seen;
  add_kept_ids(out, 0, steps, seen);
  add_kept_ids(out, 2, steps, seen);
  add_kept_ids(out, 1, checkpoint, seen);  // the lost workers' steps after the checkpoint were rolled back
  add_kept_ids(out, 3, checkpoint, seen);
  expect_kept_once(out, r.output, seen, 4 * checkpoint + 2 * (steps - checkpoint), steps);
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
