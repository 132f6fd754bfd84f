// A parameter-server stream worker that leaves the job for good (SIGTERM's leave, `trib scale`
// down, or a worker the launcher does not relaunch, cluster.max_restarts: 0): its Kafka
// partitions go to the other workers at its last applied push, at their next step boundary,
// without a rebalance or a pause, and the job goes on to its end with every event trained once.
// The per-worker record of applied event ids (data.kafka.record_ids) checks "every event once".
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

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

struct Departure {
  std::string name;
  std::string mode = "async";  // strategy.mode
  int workers = 3;
  int servers = 2;
  std::string fault;          // TRIB_TEST_FAULT
  std::vector<std::string> extra;  // more --set values
};

struct Ran {
  testing::TribRun run;
  std::map<std::int64_t, int> seen;
  int runs = 0;
  std::int64_t events = 0;
};

// Runs the job with `fault` on 6000 events over 6 partitions; `on_line` as run_trib's.
Ran run_departure(const Departure& d, const fs::path& out,
                  const std::function<void(const std::string&, testing::Trib&)>& on_line = {}) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = testing::produce_options(broker.bootstrap());
  Ran r;
  EXPECT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
  r.events = produce.count;
  std::vector<std::string> sets = {"training.checkpoint_every=100", "strategy.mode=" + d.mode,
                                   "cluster.workers=" + std::to_string(d.workers),
                                   "cluster.ps=" + std::to_string(d.servers)};
  sets.insert(sets.end(), d.extra.begin(), d.extra.end());
  std::map<std::string, std::string> env;
  if (!d.fault.empty()) env["TRIB_TEST_FAULT"] = d.fault;
  r.run = testing::run_trib(testing::ps_stream_args(out, broker.bootstrap(), d.name, sets), std::chrono::seconds(240),
                            on_line, env);
  int rewinds = 0;
  r.seen = recorded_ids(out, d.workers, r.runs, rewinds);
  EXPECT_EQ(rewinds, 0);
  return r;
}

// Every other worker says it took its part of worker `w`'s partitions at a step boundary.
void expect_adopted_by_the_others(const std::string& output, int w, int workers) {
  for (int o = 0; o < workers; ++o) {
    if (o == w) continue;
    EXPECT_TRUE(std::regex_search(output, std::regex("worker " + std::to_string(o) + ": worker\\(s\\) " +
                                                     std::to_string(w) + " left the job for good: at step \\d+ it "
                                                                         "takes partition\\(s\\) ")))
        << output;
  }
}

// SIGTERM to worker 1 of 3 (two servers, async) once its step 150 is applied: it leaves at that
// step boundary, its partitions 1 and 4 go to workers 2 and 0 at its last applied push.
TEST(StreamTraining, AParameterServerWorkerThatLeavesHandsItsPartitionsToTheOthersExactlyOnceAsync) {
  const fs::path out = testing::fresh_path("stream", "ps-worker-leaves-async");
  const Departure d{.name = "ps-worker-leaves-async", .fault = "stream-worker-leaves-at-step:1:150", .extra = {}};
  const Ran r = run_departure(d, out);
  const std::string& output = r.run.output;
  ASSERT_NE(output.find("TRIB_TEST_FAULT: SIGTERM to worker 1 after its step 150"), std::string::npos) << output;
  ASSERT_EQ(r.run.exit_code, 0) << output;
  // At the step boundary where it sees the signal: 150's, or the next one's.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m,
                                std::regex(R"(worker 1: leaves the running job at step (\d+): its partitions 1, 4 go )"
                                           R"(to the other workers at its last applied push: kafka\.transactions\.1=)")))
      << output;
  EXPECT_GE(std::stoll(m[1]), 150) << output;
  expect_adopted_by_the_others(output, 1, 3);
  EXPECT_EQ(output.find("relaunched"), std::string::npos) << output;
  EXPECT_EQ(output.find("restarting the job"), std::string::npos) << output;
  EXPECT_EQ(r.runs, 3) << "one process per worker";
  expect_each_event_once(r.seen, r.events, out, output);
  fs::remove_all(out);
}

// Sync, 2 workers and 1 server: the chief goes on alone (its rounds close without the leaver)
// and reads all six partitions.
TEST(StreamTraining, AParameterServerWorkerThatLeavesHandsItsPartitionsToTheOthersExactlyOnceSync) {
  const fs::path out = testing::fresh_path("stream", "ps-worker-leaves-sync");
  const Departure d{.name = "ps-worker-leaves-sync", .mode = "sync", .workers = 2, .servers = 1,
                    .fault = "stream-worker-leaves-at-step:1:150", .extra = {}};
  const Ran r = run_departure(d, out);
  const std::string& output = r.run.output;
  ASSERT_EQ(r.run.exit_code, 0) << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(worker 1: leaves the running job at step 15\d: its partitions )"
                                                   R"(1, 3, 5 go to the other workers)")))
      << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(worker 0: worker\(s\) 1 left the job for good: at step \d+ it )"
                                                   R"(takes partition\(s\) 1, 3, 5 of theirs at their last applied )"
                                                   R"(push, and reads 0, 1, 2, 3, 4, 5)")))
      << output;
  EXPECT_EQ(r.runs, 2);
  expect_each_event_once(r.seen, r.events, out, output);
  fs::remove_all(out);
}

// cluster.max_restarts: 0 and worker 1 killed (-9) once its step 150 is applied: the launcher
// gives up on it, the chief publishes its departure from the servers' cursor, and the others
// take its partitions; the checkpoint barriers stop waiting for it (no 10-minute wait).
TEST(StreamTraining, AParameterServerWorkerNeverRelaunchedHandsItsPartitionsToTheOthersExactlyOnce) {
  const fs::path out = testing::fresh_path("stream", "ps-worker-given-up");
  const Departure d{.name = "ps-worker-given-up", .fault = "stream-worker-lost-at-step:1:150",
                    .extra = {"cluster.max_restarts=0"}};
  const auto t0 = std::chrono::steady_clock::now();
  const Ran r = run_departure(d, out);
  const std::string& output = r.run.output;
  ASSERT_NE(output.find("TRIB_TEST_FAULT: worker 1 is lost after its step 150"), std::string::npos) << output;
  ASSERT_EQ(r.run.exit_code, 0) << output;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(200)) << output;
  EXPECT_NE(output.find("it was evicted, and the job goes on without it"), std::string::npos) << output;
  EXPECT_NE(output.find("worker 0: the launcher gave up on worker 1: its partitions go to the other workers at its last "
                        "applied push: "),
            std::string::npos)
      << output;
  expect_adopted_by_the_others(output, 1, 3);
  EXPECT_EQ(output.find("relaunched"), std::string::npos) << output;
  EXPECT_EQ(r.runs, 3);
  expect_each_event_once(r.seen, r.events, out, output);
  fs::remove_all(out);
}

// The ids worker `w`'s `run`-th process (1: the first) applied, from its record.
std::vector<std::int64_t> ids_of_run(const fs::path& out, int w, int run) {
  std::ifstream in(out / "stream_ids" / ("worker-" + std::to_string(w) + ".txt"));
  std::vector<std::int64_t> ids;
  int at = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("run ")) {
      ++at;
      continue;
    }
    if (at != run) continue;
    std::istringstream ls(line);
    std::int64_t step = 0, id = 0;
    ls >> step;
    while (ls >> id) ids.push_back(id);
  }
  return ids;
}

// `trib scale RUN_DIR --workers 2` once checkpoint 100 is written: worker 2 (the highest) gets
// SIGTERM and leaves; once its process has ended, `--workers 3` starts a worker 2 again; with
// `leave_again`, once that one says it took its partitions back, `--workers 2` makes it leave a
// second time. `phase` ends at the last step taken (2, or 3 with `leave_again`).
Ran scale_down_and_up(const Departure& d, const fs::path& out, bool leave_again, int& phase) {
  phase = 0;
  std::unique_ptr<testing::Trib> scale;
  auto start_scale = [&](int n) {
    scale = std::make_unique<testing::Trib>("scale",
                                            std::vector<std::string>{"scale", out.string(), "--workers", std::to_string(n)});
  };
  return run_departure(d, out, [&](const std::string&, testing::Trib& p) {
    if (scale && scale->exited()) {
      EXPECT_EQ(scale->exit_code(), 0) << scale->output();
      scale.reset();
    }
    if (scale) return;
    if (phase == 0 && testing::newest_checkpoint(out) >= 100) {
      start_scale(2);
      phase = 1;
    } else if (phase == 1) {
      const std::string& o = p.output();
      if (o.find("worker 2: leaves the running job at step") == std::string::npos) return;
      std::smatch m;
      if (!std::regex_search(o, m, std::regex(R"(started .*worker2 \(pid (\d+)\))"))) return;
      // Its process gone (the launcher reaps it), the index is free for the joiner.
      if (::kill(static_cast<pid_t>(std::stol(m[1])), 0) == 0 || errno != ESRCH) return;
      start_scale(3);
      phase = 2;
    } else if (phase == 2 && leave_again && p.output().find("worker 2: took its partitions back") != std::string::npos) {
      // The same index leaves again: its departure 2 goes to the others as the first did.
      start_scale(2);
      phase = 3;
    }
  });
}

// scale_down_and_up of an async job (3 workers, max_workers 3) with `fault`, without the second
// leave, in a fresh directory named `name` (`out`); a failed expectation unless it ended at phase 2
// and exited 0.
Ran scaled_down_and_up_with(const std::string& name, const std::string& fault, fs::path& out) {
  out = testing::fresh_path("stream", name);
  const Departure d{.name = name, .fault = fault, .extra = {"cluster.max_workers=3"}};
  int phase = 0;
  Ran r = scale_down_and_up(d, out, false, phase);
  EXPECT_EQ(phase, 2) << r.run.output;
  EXPECT_EQ(r.run.exit_code, 0) << r.run.output;
  return r;
}

// Async: workers 0 and 1 take worker 2's partitions 2 and 5; the worker 2 started again takes
// them back: each hands its part back at a step boundary, the chief admits it, and it trains
// from there. Once it reads them again, it leaves a second time. Every event is trained once.
TEST(StreamTraining, TribScaleDownAndUpAParameterServerStreamJobTrainsEveryEventOnce) {
  const fs::path out = testing::fresh_path("stream", "ps-stream-scale");
  const Departure d{.name = "ps-stream-scale", .fault = "", .extra = {"cluster.max_workers=3"}};
  int phase = 0;
  const Ran r = scale_down_and_up(d, out, true, phase);
  const std::string& output = r.run.output;
  ASSERT_EQ(phase, 3) << output;
  ASSERT_EQ(r.run.exit_code, 0) << output;
  EXPECT_NE(output.find("local cluster: scaling from 3 to 2 worker(s)"), std::string::npos) << output;
  expect_adopted_by_the_others(output, 2, 3);
  EXPECT_TRUE(std::regex_search(output, std::regex("local cluster: worker2 joins \\(pid [0-9]+\\)"))) << output;
  EXPECT_NE(output.find("worker 2: started again after it left the job for good: asks the workers that took its "
                        "partitions to hand them back (return 1)"),
            std::string::npos)
      << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(worker 0: worker 2 is back: at step \d+ it hands partition\(s\) )"
                                                   R"(2 back at its applied progress kafka\.transactions\.2=)")))
      << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(worker 1: worker 2 is back: at step \d+ it hands partition\(s\) )"
                                                   R"(5 back at its applied progress kafka\.transactions\.5=)")))
      << output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(worker 0: admits worker 2 back into the job at step (\d+))")))
      << output;
  EXPECT_TRUE(std::regex_search(output, std::regex("worker 2: took its partitions back: from step " + m[1].str() +
                                                   " it reads 2, 5 at the handed-over progress")))
      << output;
  // It left again after it had read its partitions: the others took them once more.
  const std::regex left_again(R"(worker 2: leaves the running job at step \d+: its partitions 2, 5 go to the other )");
  EXPECT_EQ(std::distance(std::sregex_iterator(output.begin(), output.end(), left_again), std::sregex_iterator()), 2)
      << output;
  for (int o : {0, 1}) {
    const std::regex adopted("worker " + std::to_string(o) + ": worker\\(s\\) 2 left the job for good: at step \\d+");
    EXPECT_EQ(std::distance(std::sregex_iterator(output.begin(), output.end(), adopted), std::sregex_iterator()), 2)
        << output;
  }
  EXPECT_EQ(r.runs, 4) << "worker 2's two processes";
  // The joiner trains again: its second process applied events of its partitions.
  EXPECT_FALSE(ids_of_run(out, 2, 2).empty()) << output;
  expect_each_event_once(r.seen, r.events, out, output);
  fs::remove_all(out);
}

// Async, the joiner lost (kill -9) once its step 1100 is applied, after it took its share back
// (admitted around step 700 here): the launcher relaunches it, and it resumes its partitions at
// its last applied push, not where its departure or the hand-overs had them.
TEST(StreamTraining, TribScaleUpAJoinerLostAfterItTookItsShareBackResumesAtItsLastAppliedPush) {
  fs::path out;
  const Ran r = scaled_down_and_up_with("ps-stream-scale-lost", "stream-worker-lost-at-step:2:1100", out);
  ASSERT_FALSE(HasFailure());
  const std::string& output = r.run.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(worker 0: admits worker 2 back into the job at step (\d+))")))
      << output;
  ASSERT_LT(std::stoll(m[1]), 1100) << "admitted too late for the fault to hit the joiner: " << output;
  ASSERT_NE(output.find("TRIB_TEST_FAULT: worker 2 is lost after its step 1100"), std::string::npos) << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(worker 2: relaunched into the running job at step 1100: its )"
                                                   R"(partitions 2, 5 continue at its last applied push)")))
      << output;
  EXPECT_EQ(r.runs, 5) << "worker 2's three processes";
  expect_each_event_once(r.seen, r.events, out, output);
  fs::remove_all(out);
}

// Async, worker 1 lost (kill -9) at the step boundary where it would hand its part of worker
// 2's share back (TRIB_TEST_FAULT=stream-worker-lost-before-hand-back:1): the joiner waits; the
// launcher relaunches worker 1, which resumes at its last applied push, partition 5 included,
// and hands it back in its place. The chief then admits the joiner, and every event is trained
// once.
TEST(StreamTraining, TribScaleUpAnAdopterLostBeforeItHandsTheShareBackHandsItBackFromItsRelaunch) {
  fs::path out;
  const Ran r = scaled_down_and_up_with("ps-stream-scale-adopter-lost", "stream-worker-lost-before-hand-back:1", out);
  ASSERT_FALSE(HasFailure());
  const std::string& output = r.run.output;
  ASSERT_NE(output.find("TRIB_TEST_FAULT: worker 1 is lost before it hands a returning worker's share back"),
            std::string::npos)
      << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(worker1 \(pid \d+\) was killed by signal 9.*; relaunching)")))
      << output;
  // The relaunch reads only its own partitions; partition 5 goes back at what its lost process
  // applied of it, which the joiner then starts from.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m,
                                std::regex(R"(worker 1: worker 2 is back: at step \d+ it hands partition\(s\) 5 back at )"
                                           R"(the progress its lost process applied (kafka\.transactions\.5=\d+))")))
      << output;
  const std::string handed = m[1].str();
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(worker 1: relaunched into the running job at step \d+: its )"
                                                   R"(partitions 1, 4 continue at its last applied push: .*)" +
                                                   std::regex_replace(handed, std::regex(R"(\.)"), R"(\.)"))))
      << output;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(worker 0: admits worker 2 back into the job at step (\d+))")))
      << output;
  EXPECT_TRUE(std::regex_search(output, std::regex("worker 2: took its partitions back: from step " + m[1].str() +
                                                   " it reads 2, 5 at the handed-over progress kafka\\.transactions\\.2=\\d+ " +
                                                   std::regex_replace(handed, std::regex(R"(\.)"), R"(\.)"))))
      << output;
  EXPECT_FALSE(ids_of_run(out, 2, 2).empty()) << output;
  expect_each_event_once(r.seen, r.events, out, output);
  fs::remove_all(out);
}

// Sync: taking a share back is not built there (docs/fault_tolerance.md): the worker 2 started
// again reads nothing, its partitions stay with workers 0 and 1, and every event is still
// trained once.
TEST(StreamTraining, TribScaleDownAndUpASyncParameterServerStreamJobTrainsEveryEventOnce) {
  const fs::path out = testing::fresh_path("stream", "ps-stream-scale-sync");
  const Departure d{.name = "ps-stream-scale-sync", .mode = "sync", .servers = 1, .fault = "",
                    .extra = {"cluster.max_workers=3"}};
  int phase = 0;
  const Ran r = scale_down_and_up(d, out, false, phase);
  const std::string& output = r.run.output;
  ASSERT_EQ(phase, 2) << output;
  ASSERT_EQ(r.run.exit_code, 0) << output;
  expect_adopted_by_the_others(output, 2, 3);
  EXPECT_NE(output.find("worker 2: started again after it left the job for good: its partitions stay with the workers "
                        "that took them (taking them back is built for async mode only)"),
            std::string::npos)
      << output;
  EXPECT_EQ(output.find("is back: at step"), std::string::npos) << output;
  EXPECT_EQ(r.runs, 4) << "worker 2's two processes";
  EXPECT_TRUE(ids_of_run(out, 2, 2).empty()) << output;
  expect_each_event_once(r.seen, r.events, out, output);
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
