// Issue 12, multi-host: the allreduce stream job of stream_allreduce_loss_test.cc run as a user
// runs it across hosts, as separate processes on loopback (`trib coordinator`, and a `trib
// worker --join ADDR --index W` for each of its 3 workers) on librdkafka's mock cluster, hosted
// by the test. Worker 2 is killed (kill -9) at its step 225, as its own id record says (the line
// of a step is written as the step's exchange begins): the coordinator evicts it and says so,
// the survivors re-form their group in place, go on from the last step both completed with
// every worker's Kafka progress of it (the lost worker's partitions included) and finish the
// run, every event trained once. A
// supervisor that starts worker 2 again has it refused with one line with cluster.stream_rejoin
// off (the second test), and the run ends the same; with it on, the default, it rejoins the
// running group (the third). The fourth loses the chief instead: the coordinator waits for it,
// and the chief started again joins the running group and takes the run back.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "e2e/cluster/supervised_job.h"
#include "e2e/stream/allreduce_stream_util.h"
#include "e2e/stream/stream_record.h"
#include "e2e/trib_process.h"
#include "trib/stream/mock_broker.h"

namespace trib::testing {
namespace {

const std::string kExample = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";

// Starts the job's 3 workers (`workers`; `all`: them and the coordinator) and kills worker `lost`
// (kill -9) once its step 2 * every + 25 has begun, as its own id record says: some steps past
// checkpoint 200, which the survivors do not go back to.
void start_and_kill(SupervisedJob& job, int every, std::vector<std::unique_ptr<Trib>>& workers,
                    std::vector<Trib*>& all, int lost = 2) {
  ASSERT_TRUE(job.ready()) << job.coordinator->output();
  for (int w = 0; w < 3; ++w) workers.push_back(job.start("worker", w, "worker" + std::to_string(w)));
  all = {job.coordinator.get(), workers[0].get(), workers[1].get(), workers[2].get()};
  const fs::path record = job.run / "stream_ids" / ("worker-" + std::to_string(lost) + ".txt");
  ASSERT_TRUE(wait_until(all, [&] { return has_step(record, 2 * every + 25); }, 180s)) << transcript(all);
  workers[lost]->signal(SIGKILL);
  ASSERT_TRUE(wait_exit(*workers[lost], 10s, all)) << transcript(all);
  EXPECT_EQ(workers[lost]->exit_code(), 128 + SIGKILL);
}

// Loses worker 2 at its step 225 and checks the job's end; with `started_again`, its supervisor
// starts it again with the same command once the coordinator has named the loss.
void lose_worker2(const std::string& group, bool started_again) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = produce_options(broker.bootstrap());
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
  const int steps = 600, every = 100;
  std::vector<std::string> overrides =
      allreduce_stream_overrides(broker.bootstrap(), group, steps, every);
  overrides.push_back("cluster.ps=0");  // allreduce: no servers to wait for
  // A worker started again is refused only with cluster.stream_rejoin off (on, the default, it
  // would rejoin the running group).
  if (started_again) overrides.push_back("cluster.stream_rejoin=false");
  SupervisedJob job("supervised_stream", [](const TempDir&) { return kExample; }, overrides);
  std::vector<std::unique_ptr<Trib>> workers;
  std::vector<Trib*> all;
  start_and_kill(job, every, workers, all);
  if (::testing::Test::HasFatalFailure()) return;
  std::unique_ptr<Trib> again;
  if (started_again) {
    ASSERT_TRUE(wait_until(all, [&] { return job.coordinator->printed("the job goes on with 2 worker(s)"); }, 30s))
        << transcript(all);
    again = job.start("worker", 2, "worker2 started again");
    all.push_back(again.get());
    ASSERT_TRUE(wait_exit(*again, 60s, all)) << transcript(all);
    // Refused, with one line (cluster.stream_rejoin is off).
    EXPECT_NE(again->exit_code(), 0) << transcript(all);
    EXPECT_TRUE(again->printed("worker 2: an allreduce stream job takes a worker back while it runs only with "
                               "cluster.stream_rejoin: true"))
        << transcript(all);
  }
  const std::vector<Trib*> running{job.coordinator.get(), workers[0].get(), workers[1].get()};
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(running); }, 240s)) << transcript(all);
  const std::string out = transcript(all);
  for (Trib* p : running) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;

  // The coordinator names the eviction and the job goes on; nothing restarts.
  const std::regex evicted(R"(coordinator: worker 2 at 127\.0\.0\.1:[0-9]+ was lost \(.*\); generation [0-9]+: )"
                           R"(the job goes on with 2 worker\(s\))");
  EXPECT_TRUE(std::regex_search(job.coordinator->output(), evicted)) << out;
  EXPECT_TRUE(job.coordinator->printed("every worker finished")) << out;
  EXPECT_EQ(out.find("resumed from"), std::string::npos) << out;
  std::smatch m;
  // The strategy's rollback (at most the one step some survivor applied alone), and the stream
  // hook going on from that very step with all 3 workers' Kafka progress of it.
  ASSERT_TRUE(std::regex_search(workers[0]->output(), m,
                                std::regex(R"(back to step (\d+) \((\d+) step\(s\) undone\))")))
      << out;
  const std::int64_t back = std::stoll(m[1]);
  EXPECT_LE(std::stoll(m[2]), 1) << out;
  const std::regex went_on(R"(worker 0: allreduce group \d+ \(workers 0, 1\) goes on from step (\d+) with the Kafka )"
                           R"(progress of that step of all 3 workers that took it)");
  ASSERT_TRUE(std::regex_search(workers[0]->output(), m, went_on)) << out;
  const std::int64_t step = std::stoll(m[1]);
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_EQ(step, back) << out;
  EXPECT_GT(step, 2 * every) << out;
  EXPECT_LT(step, 3 * every) << out;
  EXPECT_EQ(out.find("rolled back to checkpoint"), std::string::npos) << out;
  EXPECT_TRUE(workers[1]->printed("worker 1: allreduce group")) << out;

  // Every worker's events up to that step, the survivors' after it: each once, and the final
  // checkpoint's Kafka offsets and the totals hold exactly them.
  std::map<std::int64_t, int> seen;
  add_kept_ids(job.run, 0, steps, seen);
  add_kept_ids(job.run, 1, steps, seen);
  add_kept_ids(job.run, 2, step, seen);  // its steps after that one were rolled back
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 3 * step + 2 * (steps - step)) << out;
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  EXPECT_EQ(newest_checkpoint(job.run), steps) << out;
  EXPECT_EQ(offsets_done(job.run, steps, "transactions"), static_cast<std::int64_t>(seen.size()))
      << "the final checkpoint's Kafka offsets hold exactly the events kept";
  ASSERT_TRUE(std::regex_search(workers[0]->output(), m, std::regex(R"(stream totals: consumed \d+ trained (\d+))")))
      << out;
  EXPECT_EQ(std::stoll(m[1]), static_cast<std::int64_t>(seen.size())) << out;
}

TEST(SupervisedStream, AnAllreduceStreamJobThatLosesAWorkerReformsInPlaceExactlyOnce) {
  lose_worker2("supervised-reform", false);
}

TEST(SupervisedStream, AWorkerStartedAgainIsRefusedAndTheSurvivorsStillTrainEveryEventOnce) {
  lose_worker2("supervised-refused", true);
}

// Worker `lost` killed at its step 225 and started again by its supervisor with the same command
// once the coordinator's line says `named`; the events arrive live, 100 a second, so that the
// survivors still train when it is back. Every process still running exits 0, nothing restarts,
// and the process started again rejoins the running group, every event once
// (expect_rejoined_once). A chief started again also takes the run back.
void lose_and_start_again(const std::string& name, int lost, const std::string& named) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  stream::ProduceOptions produce = produce_options(broker.bootstrap());
  produce.rate = 100;
  std::thread producer([&] { stream::produce_events(produce, stop); });
  const int steps = 600, every = 100;
  std::vector<std::string> overrides = allreduce_stream_overrides(broker.bootstrap(), name, steps, every);
  overrides.push_back("cluster.ps=0");  // allreduce: no servers to wait for
  SupervisedJob job("supervised_stream_" + name, [](const TempDir&) { return kExample; }, overrides);
  std::vector<std::unique_ptr<Trib>> workers;
  std::vector<Trib*> all;
  start_and_kill(job, every, workers, all, lost);
  if (::testing::Test::HasFatalFailure()) {
    stop = true;
    producer.join();
    return;
  }
  const bool named_it = wait_until(all, [&] { return job.coordinator->printed(named); }, 30s);
  std::unique_ptr<Trib> again;
  if (named_it) again = job.start("worker", lost, "worker" + std::to_string(lost) + " started again");
  if (again) all.push_back(again.get());
  // The workers by index, the process started again in the lost one's place, and who must exit 0.
  std::vector<Trib*> members, running{job.coordinator.get()};
  for (int w = 0; w < 3; ++w) {
    members.push_back(w == lost && again ? again.get() : workers[w].get());
    running.push_back(members.back());
  }
  const bool ended = named_it && wait_until(all, [&] { return all_exited(running); }, 240s);
  stop = true;
  producer.join();
  const std::string out = transcript(all);
  ASSERT_TRUE(named_it) << out;
  ASSERT_TRUE(ended) << out;
  for (Trib* p : running) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;
  EXPECT_TRUE(job.coordinator->printed("every worker finished")) << out;
  EXPECT_EQ(out.find("resumed from"), std::string::npos) << out;
  if (lost == 0) {
    EXPECT_TRUE(job.coordinator->printed("worker 0 (the chief) came back")) << out;
    EXPECT_TRUE(again->printed("worker 0: relaunched in place of the lost chief; takes the run back at step")) << out;
  }
  stream_e2e::expect_rejoined_once(job.run, steps, every,
                                   {members[0]->output(), members[1]->output(), members[2]->output()}, out, lost);
}

// With cluster.stream_rejoin on, the default: worker 2, started again by its supervisor with the
// same command once the coordinator has named the loss, rejoins the running group, which goes on
// from its own step with it, as under `trib train` (stream_allreduce_rejoin_test.cc).
TEST(SupervisedStream, AWorkerStartedAgainRejoinsTheRunningGroupExactlyOnce) {
  lose_and_start_again("rejoin", 2, "the job goes on with 2 worker(s)");
}

// The chief (worker 0) killed at its step 225 (issue 12): the coordinator waits for it instead
// of ending the job, workers 1 and 2 go on without it (worker 1 leading), and the chief its
// supervisor starts again with the same command joins their running group and takes the run
// directory back, as under `trib train` (stream_allreduce_rejoin_test.cc): the same checks as
// for worker 2 (the join at the group's step, no checkpoint loaded), every event once (the new
// chief's totals line holding the counts it took back), and nothing restarts.
TEST(SupervisedStream, AnAllreduceStreamJobsChiefStartedAgainRejoinsTheRunningGroupExactlyOnce) {
  lose_and_start_again("chief", 0, "for worker 0, the chief, to come back");
}

}  // namespace
}  // namespace trib::testing
