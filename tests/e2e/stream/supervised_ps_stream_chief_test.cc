// Issue 12, multi-host: a parameter-server stream job run as a user runs it across hosts, as
// separate processes on loopback (`trib coordinator`, `trib ps --join`, a `trib worker --join ADDR
// --index W` for each of its 2 workers) on librdkafka's mock cluster, hosted by the test. The
// chief (worker 0) is lost (kill -9) after its step 150; the coordinator waits for it instead of
// ending the job, and the chief its supervisor starts again with the same command rejoins the
// running job in place, as under `trib train` (stream_ps_worker_loss_test.cc): the servers'
// state, its Kafka share at its last applied push, the run directory taken back; every event once.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "e2e/cluster/supervised_job.h"
#include "e2e/stream/stream_record.h"
#include "e2e/trib_process.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib::testing {
namespace {

const std::string kExample = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";

// Async, one server, 2 workers, 6000 events produced before the job starts, the run ended by 3 s
// without events. TRIB_TEST_FAULT=stream-worker-lost-at-step:0:150 makes the chief kill itself
// once its step 150 is applied by the server and its id line written (so that the record and the
// server's cursor agree); its process started again resumes past that step and is not hit.
TEST(SupervisedStream, AParameterServerStreamJobsChiefStartedAgainRejoinsInPlaceExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = produce_options(broker.bootstrap());
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
  const std::int64_t n = produce.count;
  SupervisedJob job("supervised_ps_stream_chief", [](const TempDir&) { return kExample; },
                    {"data.kafka.bootstrap_servers=\"" + broker.bootstrap() + "\"", "data.kafka.record_ids=true",
                     "data.kafka.shuffle_buffer=0", "data.kafka.idle_timeout_s=3", "data.kafka.assignment=auto",
                     "data.kafka.group_id=supervised-ps-chief", "training.steps=0", "training.batch=1",
                     "training.eval_every=1000", "training.checkpoint_every=100", "strategy.name=ps",
                     "strategy.mode=async", "cluster.workers=2", "cluster.ps=1"});
  job.env["TRIB_TEST_FAULT"] = "stream-worker-lost-at-step:0:150";
  ASSERT_TRUE(job.ready()) << job.coordinator->output();
  std::unique_ptr<Trib> server = job.start("ps", 0, "ps0");
  std::unique_ptr<Trib> chief = job.start("worker", 0, "worker0");
  std::unique_ptr<Trib> worker1 = job.start("worker", 1, "worker1");
  std::vector<Trib*> all{job.coordinator.get(), server.get(), chief.get(), worker1.get()};
  ASSERT_TRUE(wait_exit(*chief, 180s, all)) << transcript(all);
  ASSERT_TRUE(chief->printed("TRIB_TEST_FAULT: worker 0 is lost after its step 150")) << transcript(all);
  EXPECT_EQ(chief->exit_code(), 128 + SIGKILL);
  // Its node's supervisor starts it again once the coordinator says it waits for it.
  ASSERT_TRUE(wait_until(all, [&] { return job.coordinator->printed("for worker 0, the chief, to come back"); }, 30s))
      << transcript(all);
  std::unique_ptr<Trib> again = job.start("worker", 0, "worker0 started again");
  all.push_back(again.get());
  const std::vector<Trib*> running{job.coordinator.get(), server.get(), again.get(), worker1.get()};
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(running); }, 240s)) << transcript(all);
  const std::string out = transcript(all);
  for (Trib* p : running) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;
  EXPECT_TRUE(job.coordinator->printed("worker 0 (the chief) came back")) << out;
  EXPECT_TRUE(job.coordinator->printed("every worker finished")) << out;
  EXPECT_EQ(out.find("resumed from"), std::string::npos) << out;
  EXPECT_EQ(out.find("rewound in place"), std::string::npos) << "no server restores, nobody rewinds\n" << out;
  EXPECT_TRUE(again->printed("worker 0: relaunched in place of the lost chief; takes the run back at step")) << out;
  // Its data resumes at its last applied push, at its own step (async).
  std::smatch m;
  const std::string text = again->output();
  ASSERT_TRUE(std::regex_search(text, m,
                                std::regex(R"(worker 0: relaunched into the running job at step (\d+): its partitions )"
                                           R"([\d, ]+ continue at its last applied push)")))
      << out;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_EQ(std::stoll(m[1]), 150) << out;

  // Every event in the id records exactly once, both processes of the chief together (a second
  // "run" line drops nothing here: nothing rolled back), and the run's end holds each once.
  constexpr std::int64_t kAll = std::numeric_limits<std::int64_t>::max();
  std::map<std::int64_t, int> seen;
  add_kept_ids(job.run, 0, kAll, seen, kAll);
  add_kept_ids(job.run, 1, kAll, seen, kAll);
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n) << out;
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  EXPECT_EQ(offsets_done(job.run, newest_checkpoint(job.run), "transactions"), n) << out;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(stream totals: consumed (\d+) trained (\d+))"))) << out;
  EXPECT_EQ(std::stoll(m[1]), n) << out;
  EXPECT_EQ(std::stoll(m[2]), n) << out;
}

}  // namespace
}  // namespace trib::testing
