// An allreduce stream job that loses a worker while the group waits at a checkpoint's barrier:
// the worker applied the checkpoint step (its cursor of that step shared with the others) and
// died before it offered its claim. The survivors must neither wait for it until the barrier's
// timeout nor lose or repeat its events.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
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

// Worker 2 of 3 kills itself right after its update of checkpoint step 200, before its offer
// (TRIB_TEST_FAULT=stream-worker-lost-at-step:2:200), with cluster.max_restarts: 0: the job
// goes on with 2 workers and exits 0, with no restart; every kept event (all 3 workers' up to
// where the group went on, the survivors' after it) is trained once, and the final checkpoint
// and totals hold exactly them.
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerAtACheckpointBarrierGoesOnExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  produce_all(broker.bootstrap());
  const fs::path out = testing::fresh_path("stream", "allreduce-barrier-loss");
  const int steps = 600, every = 100;
  std::vector<std::string> args = job_args(broker.bootstrap(), out, "allreduce-barrier-loss", steps, every);
  args.insert(args.end(), {"--set", "cluster.max_restarts=0"});
  const auto began = std::chrono::steady_clock::now();
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(240), {},
                                         {{"TRIB_TEST_FAULT", "stream-worker-lost-at-step:2:200"}});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("worker 2 is lost after its step 200"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the job goes on without it"), std::string::npos) << r.output;
  // Checkpoint 200 lacks worker 2's claim: it is not written, and nothing goes back to 100.
  EXPECT_NE(r.output.find("step 200: no checkpoint: a worker was lost before its claim; the group re-forms without it"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("rolls back to the newest checkpoint"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolled back to checkpoint"), std::string::npos) << r.output;
  std::printf("[ info ] the run took %.1f s\n", took);
  // Where the survivors went on from, and with whose progress.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1\) goes on from step (\d+) with the Kafka progress of that step of all 3 workers)")))
      << r.output;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  const std::int64_t step = std::stoll(m[1]);
  // Every survivor stood at the barrier of step 200 with it applied: nothing is undone.
  EXPECT_EQ(step, 2 * every) << r.output;
  EXPECT_NE(r.output.find("back to step 200 (0 step(s) undone)"), std::string::npos) << r.output;
  std::map<std::int64_t, int> seen;
  add_kept_ids(out, 0, steps, seen);
  add_kept_ids(out, 1, steps, seen);
  add_kept_ids(out, 2, step, seen);
  expect_kept_once(out, r.output, seen, 3 * step + 2 * (steps - step), steps);
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
