// A parameter-server stream job that loses a non-chief worker (kill -9): the launcher
// relaunches it, and it continues its share of the partitions (fixed by its index: the job
// assigns them) at the cursor of its last push the servers applied. The others go on, the
// chief's checkpoint barriers wait for it, and no process restarts. The per-worker record of
// applied event ids (data.kafka.record_ids) checks "every event once".
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/stream/ps_stream_util.h"
#include "e2e/stream/stream_record.h"
#include "e2e/trib_process.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::expect_each_event_once;
using testing::recorded_ids;

struct Loss {
  std::string name;
  std::string mode;  // strategy.mode
  int workers = 3;
  int servers = 1;
  int victim = 1;      // 0: the chief
  int lost_at = 150;   // the victim's step after which it is lost
  int every = 100;     // training.checkpoint_every
  // Lost between its pushes of step `lost_at` (TRIB_TEST_FAULT=stream-worker-lost-between-pushes):
  // server 0 applied it, the others did not.
  bool split = false;
};

// A push that reached server 0 only: the model's variables are on both servers (so each
// holds part of that step), the relaunched worker says it resumes at the oldest cursor, and
// server 0 acknowledged exactly that one push again without applying it, server 1 none.
void expect_split_push_replayed_once(const Loss& loss, const std::string& output) {
  std::smatch m;
  for (int p = 0; p < loss.servers; ++p) {
    ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(\bps )" + std::to_string(p) + R"(: (\d+) bytes)")))
        << "the placement table names ps " << p << "\n" << output;
    EXPECT_GT(std::stoll(m[1]), 0) << "no variable on ps " << p;
  }
  const std::string w = std::to_string(loss.victim);
  EXPECT_NE(output.find("worker " + w + ": its last push reached some servers and not every other: its data resumes "
                        "at the oldest server's cursor"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("ps 0: worker " + w + "'s push of step "), std::string::npos) << output;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(  ps 0: [^\n]*MB in[^\n]*)"))) << output;
  EXPECT_NE(m[0].str().find(", 1 replayed push(es) acknowledged without applying them"), std::string::npos) << m[0];
  // Sync: no push of a step came after its round closed (dropped, its batch never applied
  // on that server), the lost worker's relaunch included.
  if (loss.mode == "sync") {
    EXPECT_NE(m[0].str().find(" 0 late dropped"), std::string::npos) << m[0];
  }
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(  ps 1: [^\n]*MB in[^\n]*)"))) << output;
  EXPECT_EQ(m[0].str().find("replayed"), std::string::npos) << m[0];
  if (loss.mode == "sync") {
    EXPECT_NE(m[0].str().find(" 0 late dropped"), std::string::npos) << m[0];
  }
}

void expect_relaunched_exactly_once(const Loss& loss) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = testing::produce_options(broker.bootstrap());
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
  const std::int64_t n = produce.count;
  const fs::path out = testing::fresh_path("stream", loss.name);
  std::vector<std::string> args = {"train", testing::kStreamExample, "--output", out.string()};
  for (const std::string& s :
       {"data.kafka.bootstrap_servers=\"" + broker.bootstrap() + "\"", std::string("data.kafka.record_ids=true"),
        std::string("data.kafka.shuffle_buffer=0"), std::string("data.kafka.idle_timeout_s=3"),
        std::string("data.kafka.assignment=auto"), "data.kafka.group_id=" + loss.name,
        std::string("training.steps=0"), std::string("training.batch=1"), std::string("training.eval_every=1000"),
        "training.checkpoint_every=" + std::to_string(loss.every), "strategy.mode=" + loss.mode,
        "cluster.workers=" + std::to_string(loss.workers), "cluster.ps=" + std::to_string(loss.servers)}) {
    args.push_back("--set");
    args.push_back(s);
  }
  const std::string fault = std::string(loss.split ? "stream-worker-lost-between-pushes:" : "stream-worker-lost-at-step:") +
                            std::to_string(loss.victim) + ":" + std::to_string(loss.lost_at);
  const testing::TribRun r = testing::run_trib(args, std::chrono::seconds(180), {}, {{"TRIB_TEST_FAULT", fault}});
  const std::string w = std::to_string(loss.victim);
  ASSERT_NE(r.output.find("TRIB_TEST_FAULT: worker " + w + " is lost after its " +
                          (loss.split ? "push of step " + std::to_string(loss.lost_at) + " reached ps 0 and not the others"
                                      : "step " + std::to_string(loss.lost_at))),
            std::string::npos)
      << r.output;
  if (loss.split) expect_split_push_replayed_once(loss, r.output);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker" + w + " relaunched"), std::string::npos) << r.output;
  if (loss.victim == 0) {
    EXPECT_NE(r.output.find("worker 0: relaunched in place of the lost chief; takes the run back at step"),
              std::string::npos)
        << r.output;
  }
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  // The relaunched worker says where its data resumes: its last applied push, at its step.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m,
      std::regex("worker " + w + R"(: relaunched into the running job at step (\d+): its partitions [\d, ]+ continue at )"
                                 R"(its last applied push: [^\n]+)")))
      << r.output;
  std::printf("[ info ] %s\n", m[0].str().c_str());
  const std::int64_t resumed = std::stoll(m[1]);
  if (loss.mode == "async")
    EXPECT_EQ(resumed, loss.lost_at) << "an async worker resumes at its own clock\n" << r.output;
  else
    EXPECT_GE(resumed, loss.lost_at) << r.output;
  EXPECT_NE(r.output.find("worker " + w + ": rejoins at step " + std::to_string(resumed) + ", data at "),
            std::string::npos)
      << r.output;

  int runs = 0, rewinds = 0;
  const std::map<std::int64_t, int> seen = recorded_ids(out, loss.workers, runs, rewinds);
  EXPECT_EQ(runs, loss.workers + 1) << "one record per process: the victim's two";
  EXPECT_EQ(rewinds, 0);
  // The victim's counts continued from its cursor.
  expect_each_event_once(seen, n, out, r.output);
  fs::remove_all(out);
}

// Async, two servers: worker 1 of 3 lost 50 steps past checkpoint 100; the others reach
// checkpoint 200 while it is away or catching up, and their barrier waits for it.
TEST(StreamTraining, AJobThatLosesAParameterServerWorkerResumesItAtItsLastAppliedPushAsync) {
  expect_relaunched_exactly_once({.name = "ps-worker-lost-async", .mode = "async", .workers = 3, .servers = 2});
}

// Async, two servers, worker 1 of 3 lost between its pushes of step 150: server 0 applied it,
// server 1 did not. Relaunched at the oldest cursor (server 1's), it reads that batch again and
// pushes it to both; server 0 acknowledges it without applying it. Every event once.
TEST(StreamTraining, AJobThatLosesAWorkerBetweenItsPushesToTwoServersAppliesEachBatchOnceOnEachAsync) {
  expect_relaunched_exactly_once(
      {.name = "ps-worker-lost-between-pushes-async", .mode = "async", .workers = 3, .servers = 2, .split = true});
}

// Sync, two workers: the round of step 150 closes on server 0 with the lost worker's batch and
// on server 1 without it. Relaunched at the job's step, at server 1's cursor, its replay of that
// batch is its part of a round on server 0 with nothing added, and applied on server 1.
TEST(StreamTraining, AJobThatLosesAWorkerBetweenItsPushesToTwoServersAppliesEachBatchOnceOnEachSync) {
  expect_relaunched_exactly_once(
      {.name = "ps-worker-lost-between-pushes-sync", .mode = "sync", .workers = 2, .servers = 2, .split = true});
}

// Async, lost right after its update of checkpoint step 200 and before its offer there: the
// relaunched worker takes that barrier (its claim is its resumed cursor).
TEST(StreamTraining, AJobThatLosesAParameterServerWorkerAtACheckpointStepResumesItThereAsync) {
  expect_relaunched_exactly_once(
      {.name = "ps-worker-lost-at-barrier", .mode = "async", .workers = 2, .servers = 1, .lost_at = 200});
}

// Sync: the rounds close without the lost worker; relaunched, it rejoins at the job's step
// with its data at its last push in a closed round.
TEST(StreamTraining, AJobThatLosesAParameterServerWorkerResumesItAtItsLastAppliedPushSync) {
  expect_relaunched_exactly_once({.name = "ps-worker-lost-sync", .mode = "sync", .workers = 2, .servers = 2});
}

// The chief (it owns the checkpoints and the Kafka commits) lost 50 steps past checkpoint 100:
// relaunched in place, it rejoins the running job with the servers' state, its share at its
// last applied push, and goes on writing the checkpoints; nothing restarts.
TEST(StreamTraining, AJobThatLosesItsParameterServerChiefRelaunchesItInPlaceAsync) {
  expect_relaunched_exactly_once(
      {.name = "ps-chief-lost-async", .mode = "async", .workers = 3, .servers = 2, .victim = 0});
}

// The same in sync mode, the chief lost right after checkpoint step 200's update, before its
// gather: the others wait at that barrier, and the relaunched chief takes it.
TEST(StreamTraining, AJobThatLosesItsParameterServerChiefAtACheckpointStepRelaunchesItInPlaceSync) {
  expect_relaunched_exactly_once(
      {.name = "ps-chief-lost-sync", .mode = "sync", .workers = 2, .servers = 1, .victim = 0, .lost_at = 200});
}

// A worker lost right after its in-place rewind to a restored checkpoint, before its next
// push: the servers forget every cursor at the restore, so its relaunch has none, and its share
// must start at that checkpoint's progress (as the others' did), not where the run started.
// The server is killed once checkpoint 200 is written; worker 1 kills itself at its rewind
// (TRIB_TEST_FAULT=stream-worker-lost-after-rewind:1), a point no test could time from outside.
TEST(StreamTraining, AWorkerLostInARestoresRewindResumesAtTheRestoredCheckpointExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = testing::produce_options(broker.bootstrap());
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
  const std::int64_t n = produce.count;
  const fs::path out = testing::fresh_path("stream", "ps-worker-lost-in-rewind");
  std::vector<std::string> args = {"train", testing::kStreamExample, "--output", out.string()};
  for (const std::string& s :
       {"data.kafka.bootstrap_servers=\"" + broker.bootstrap() + "\"", std::string("data.kafka.record_ids=true"),
        std::string("data.kafka.shuffle_buffer=0"), std::string("data.kafka.idle_timeout_s=3"),
        std::string("data.kafka.group_id=ps-worker-lost-in-rewind"), std::string("training.steps=0"),
        std::string("training.batch=1"), std::string("training.eval_every=1000"),
        std::string("training.checkpoint_every=100"), std::string("strategy.mode=async"),
        std::string("cluster.workers=2"), std::string("cluster.ps=1")}) {
    args.push_back("--set");
    args.push_back(s);
  }
  pid_t server = 0;
  bool killed = false;
  const testing::TribRun r = testing::run_trib(
      args, std::chrono::seconds(180),
      [&](const std::string& line, testing::Trib&) {
        std::smatch m;
        if (server == 0 && std::regex_search(line, m, std::regex(R"(started .*ps0 \(pid (\d+)\))")))
          server = static_cast<pid_t>(std::stol(m[1]));
        if (!killed && server != 0 && testing::newest_checkpoint(out) >= 200) {
          killed = true;
          ::kill(server, SIGKILL);
        }
      },
      {{"TRIB_TEST_FAULT", "stream-worker-lost-after-rewind:1"}});
  ASSERT_TRUE(killed) << r.output;
  ASSERT_NE(r.output.find("TRIB_TEST_FAULT: worker 1 is lost right after its in-place rewind"), std::string::npos)
      << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: ps0 relaunched"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("parameter server restores: 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker1 relaunched"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(every server reloaded checkpoint \S+ckpt-0*(\d+) )")))
      << r.output;
  const std::string restored = m[1];
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(worker 1: relaunched into the running job at step \d+: its )"
                                                     R"(partitions [\d, ]+ continue at the restored checkpoint of )"
                                                     "step " + restored + " ")))
      << r.output;

  int runs = 0, rewinds = 0;
  const std::map<std::int64_t, int> seen = recorded_ids(out, 2, runs, rewinds);
  EXPECT_EQ(runs, 3) << "one record per process: worker 1's two";
  EXPECT_EQ(rewinds, 2) << "both workers' first processes rewound to the restored checkpoint";
  expect_each_event_once(seen, n, out, r.output);
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
