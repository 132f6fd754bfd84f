// An allreduce stream job that loses a worker: the survivors re-form their group in place, roll
// back to the newest checkpoint (variables, optimizer state and Kafka positions, the lost
// worker's partitions included) and go on with one worker fewer, or, relaunched, the worker
// rejoins and the group of 3 rolls back to its newest checkpoint again; no whole-job restart.
// The per-worker record of applied event ids (data.kafka.record_ids) checks "every event once".
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
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/trib_process.h"
#include "trib/data/data_position.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"
#include "trib/stream/stream_position.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

const std::string kExample = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";

// The events worker `w` applied and kept, per id: its lines "step id ..." up to `last_step`;
// a line "rewind S" (its group rolled back to checkpoint S) drops its lines for steps after S,
// and so does a second line "run ..." (the whole job restarted from checkpoint `restarted_at`).
void add_kept_ids(const fs::path& run_dir, int w, std::int64_t last_step, std::map<std::int64_t, int>& seen,
                  std::int64_t restarted_at = -1) {
  std::ifstream in(run_dir / "stream_ids" / ("worker-" + std::to_string(w) + ".txt"));
  std::vector<std::pair<std::int64_t, std::int64_t>> kept;  // (step, id)
  int runs = 0;
  for (std::string line; std::getline(in, line);) {
    const bool restart = line.starts_with("run ") && ++runs > 1;
    if (line.starts_with("rewind ") || restart) {
      const std::int64_t to = restart ? restarted_at : std::stoll(line.substr(7));
      std::erase_if(kept, [to](const auto& e) { return e.first > to; });
      continue;
    }
    if (line.starts_with("run ")) continue;
    std::istringstream ls(line);
    std::int64_t step = 0, id = 0;
    ls >> step;
    while (ls >> id)
      if (step <= last_step) kept.push_back({step, id});
  }
  for (const auto& e : kept) ++seen[e.second];
}

// A 3-worker allreduce job on `bootstrap`, batch 1, no shuffle buffer, that records applied ids.
std::vector<std::string> job_args(const std::string& bootstrap, const fs::path& out, const std::string& group,
                                  int steps, int every) {
  return {"train", kExample, "--output", out.string(),
          "--set", "data.kafka.bootstrap_servers=\"" + bootstrap + "\"",
          "--set", "data.kafka.record_ids=true",
          "--set", "data.kafka.shuffle_buffer=0",
          "--set", "data.kafka.idle_timeout_s=0",
          "--set", "data.kafka.group_id=" + group,
          "--set", "data.kafka.properties={\"session.timeout.ms\": \"3000\"}",
          "--set", "strategy.name=allreduce",
          "--set", "cluster.workers=3",
          "--set", "training.batch=1",
          "--set", "training.eval_every=1000",
          "--set", "training.steps=" + std::to_string(steps),
          "--set", "training.checkpoint_every=" + std::to_string(every)};
}

stream::ProduceOptions produce_options(const std::string& bootstrap) {
  stream::ProduceOptions produce;
  produce.kafka.bootstrap_servers = bootstrap;
  produce.topic = "transactions";
  produce.count = 6000;
  produce.rate = 0;  // as fast as the broker takes them
  return produce;
}

// Waits (polling, up to 120 s) until `file` has a line for step `step`.
bool wait_for_step(const fs::path& file, std::int64_t step) {
  const std::string prefix = std::to_string(step) + " ";
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(2))) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with(prefix)) return true;
  }
  return false;
}

// How many offsets of `topic` checkpoint `step`'s "kafka" section holds as applied.
std::int64_t offsets_done(const fs::path& run_dir, int step, const std::string& topic) {
  for (auto& e : fs::directory_iterator(run_dir / "checkpoints")) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("ckpt-") || std::stoi(name.substr(5)) != step) continue;
    std::ifstream in(e.path() / "manifest.json");
    const std::string hex = nlohmann::json::parse(in).at("sections").at("kafka").at("encoded_hex").get<std::string>();
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    std::int64_t done = 0;
    for (const auto& [p, progress] : stream::progress_in(data::DataPosition::parse(bytes), topic))
      done += progress.next + progress.applied.count();
    return done;
  }
  ADD_FAILURE() << "no checkpoint " << step << " in " << run_dir;
  return -1;
}

// Every kept event (`seen`) was trained exactly once, and the run's final checkpoint (`steps`)
// holds exactly them in its Kafka offsets, as the totals line does.
void expect_kept_once(const fs::path& out, int steps, const std::map<std::int64_t, int>& seen, const std::string& output) {
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  EXPECT_EQ(testing::newest_checkpoint(out), steps) << output;
  EXPECT_EQ(offsets_done(out, steps, "transactions"), static_cast<std::int64_t>(seen.size()))
      << "the final checkpoint's Kafka offsets hold exactly the events kept";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(stream totals: consumed \d+ trained (\d+))"))) << output;
  EXPECT_EQ(std::stoll(m[1]), static_cast<std::int64_t>(seen.size())) << output;
}

// kill -9 to worker 2 of 3 25 steps after checkpoint 200, 375 steps before the end, with
// cluster.stream_rejoin off (the default: not relaunched): the survivors re-form as a group of 2, roll back to
// the newest checkpoint and finish the run.
// Kept events: every worker's up to the checkpoint, the survivors' after it; each once, and
// the final checkpoint's offsets hold exactly them (events are numbered from offset 0).
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerReformsInPlaceExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = produce_options(broker.bootstrap());
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
  const fs::path out = testing::fresh_path("stream", "allreduce-reform");
  const int steps = 600, every = 100;
  // cluster.stream_rejoin is off by default: the worker is not relaunched, the job goes on with N-1.
  const std::vector<std::string> args = job_args(broker.bootstrap(), out, "allreduce-reform", steps, every);
  const std::regex started_worker2(R"(started .*worker2 \(pid (\d+)\))");
  pid_t worker2 = 0;
  std::atomic<bool> killed{false};
  std::thread killer;
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(180), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (worker2 == 0 && std::regex_search(line, m, started_worker2)) {
      worker2 = static_cast<pid_t>(std::stol(m[1]));
      // Some steps past checkpoint 200, so that the survivors have steps to redo: worker 2's
      // own record says when (a step line is written once the step is applied).
      killer = std::thread([&, pid = worker2] {
        if (!wait_for_step(out / "stream_ids" / "worker-2.txt", 2 * every + 25)) return;
        killed = ::kill(pid, SIGKILL) == 0;
      });
    }
  });
  if (killer.joinable()) killer.join();
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker2 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the job goes on without it"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1\) rolled back to checkpoint (\d+) from step \d+ \(\d+ steps to redo\))")))
      << r.output;
  const std::int64_t checkpoint = std::stoll(m[1]);
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_GE(checkpoint, 2 * every) << r.output;
  EXPECT_EQ(checkpoint % every, 0) << r.output;
  EXPECT_NE(r.output.find("worker 1: allreduce group"), std::string::npos) << r.output;

  std::map<std::int64_t, int> seen;
  add_kept_ids(out, 0, steps, seen);
  add_kept_ids(out, 1, steps, seen);
  add_kept_ids(out, 2, checkpoint, seen);  // the lost worker's steps after the checkpoint were rolled back
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 3 * checkpoint + 2 * (steps - checkpoint)) << r.output;
  expect_kept_once(out, steps, seen, r.output);
  fs::remove_all(out);
}

// Worker 2 of 3 kills itself (TRIB_TEST_FAULT) once its step 225 is applied, 25 steps after
// checkpoint 200; the launcher relaunches it and it rejoins the running group: the group of 3
// rolls back to its newest checkpoint (S2: 200, or a later one the survivors wrote meanwhile)
// and goes on, the joiner with the group's variables and optimizer state and partitions handed
// over by the consumer group. Kept events: every worker's up to S1 (the survivors' rollback
// after the loss; S2 when the loss and the join made one group), the survivors' from S1 to S2,
// all three's after S2; each once, and the final checkpoint's offsets hold exactly them.
// Not reliable yet (cluster.stream_rejoin is off by default for it): it failed 2 runs of 6
// before partitions given back to their giver kept its position (events trained twice once, a
// member's partitions read again from the checkpoint; a hang once, every worker stopped at a
// step), and passed 11 of 11 after (each join rolled back to checkpoint 200);
// docs/fault_tolerance.md, "Allreduce stream jobs: a relaunched worker rejoins".
// The events arrive live, 50 a second, so that the survivors are still training when the
// relaunched process is ready to join (its consumer's group join waits for the lost consumer's
// session to end, 3 s): the run takes about 30 s.
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerTakesItsRelaunchBackExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  stream::ProduceOptions produce = produce_options(broker.bootstrap());
  produce.rate = 50;
  std::thread producer([&] { stream::produce_events(produce, stop); });
  const fs::path out = testing::fresh_path("stream", "allreduce-rejoin");
  const int steps = 600, every = 100;
  const std::map<std::string, std::string> fault{{"TRIB_TEST_FAULT", "allreduce-worker-lost-at-step:2:225"}};
  std::vector<std::string> args = job_args(broker.bootstrap(), out, "allreduce-rejoin", steps, every);
  args.insert(args.end(), {"--set", "cluster.stream_rejoin=true"});  // off by default: not reliable yet
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(240), {}, fault);
  stop = true;
  producer.join();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("TRIB_TEST_FAULT: worker 2 is lost after its step 225 (kill -9)"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2 relaunched (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[worker2] joined the allreduce group as generation"), std::string::npos) << r.output;
  std::smatch m;
  // The group of 3 again, rolled back to a checkpoint (every member prints it).
  ASSERT_TRUE(std::regex_search(
      r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1, 2\) rolled back to checkpoint (\d+) from step \d+ \(\d+ steps to redo\))")))
      << r.output;
  const std::int64_t rejoined_at = std::stoll(m[1]);
  std::printf("[ info ] %s\n", m[0].str().c_str());
  EXPECT_NE(r.output.find("worker 2: allreduce group"), std::string::npos) << r.output;
  std::int64_t lost_at = rejoined_at;  // the survivors' own rollback, if they went on as 2 first
  if (std::regex_search(r.output, m, std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1\) rolled back to checkpoint (\d+))"))) {
    lost_at = std::stoll(m[1]);
    std::printf("[ info ] %s\n", m[0].str().c_str());
  }
  EXPECT_GE(lost_at, 2 * every) << r.output;
  EXPECT_GE(rejoined_at, lost_at) << r.output;
  EXPECT_EQ(rejoined_at % every, 0) << r.output;

  std::map<std::int64_t, int> seen;
  add_kept_ids(out, 0, steps, seen);
  add_kept_ids(out, 1, steps, seen);
  // The lost process's steps after lost_at were rolled back; the relaunched one's record
  // starts with a second "run" line.
  add_kept_ids(out, 2, steps, seen, lost_at);
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 3 * lost_at + 2 * (rejoined_at - lost_at) + 3 * (steps - rejoined_at))
      << r.output;
  expect_kept_once(out, steps, seen, r.output);
  fs::remove_all(out);
}

// The chief (worker 0, which owns the checkpoints and the Kafka commits) is not recovered in
// place: the whole job restarts from its newest checkpoint, with all 3 workers, exactly once.
TEST(StreamTraining, AnAllreduceJobThatLosesItsChiefRestartsWholeExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = produce_options(broker.bootstrap());
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
  const fs::path out = testing::fresh_path("stream", "allreduce-chief");
  const int steps = 600, every = 100;
  const std::regex started_worker0(R"(started .*worker0 \(pid (\d+)\))");
  std::atomic<bool> killed{false};
  std::thread killer;
  testing::TribRun r = testing::run_trib(
      job_args(broker.bootstrap(), out, "allreduce-chief", steps, every), std::chrono::seconds(180),
      [&](const std::string& line, testing::Trib&) {
        std::smatch m;
        if (!killer.joinable() && std::regex_search(line, m, started_worker0))
          killer = std::thread([&, pid = static_cast<pid_t>(std::stol(m[1]))] {
            if (!wait_for_step(out / "stream_ids" / "worker-0.txt", 2 * every + 25)) return;
            killed = ::kill(pid, SIGKILL) == 0;
          });
      });
  if (killer.joinable()) killer.join();
  ASSERT_TRUE(killed) << r.output;
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
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 3 * steps) << r.output;
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  EXPECT_EQ(offsets_done(out, steps, "transactions"), 3 * steps) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
