// Stream jobs as a user runs them: `trib train` reading events from a built-in broker hosted by
// this test (so that it outlives a killed job), with the per-worker record of applied event
// ids (data.kafka.record_ids) as the instrument for "every event once".
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "e2e/trib_process.h"
#include "trib/stream/kafka_producer.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::newest_checkpoint;
using testing::run_trib;
using testing::TribRun;

const std::string kExample = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";

fs::path fresh_dir(const std::string& name) { return testing::fresh_path("stream", name); }

stream::ProduceOptions produce_options(const std::string& bootstrap, std::int64_t count, double rate) {
  stream::ProduceOptions o;
  o.kafka.bootstrap_servers = bootstrap;
  o.topic = "transactions";
  o.rate = rate;
  o.count = count;
  return o;
}

// Overrides for a test job on `bootstrap`: batch 1, no shuffle buffer (tests that want the
// example's set them again), ends 3 s after the last event.
std::vector<std::string> job_args(const std::string& bootstrap, std::vector<std::string> a) {
  std::vector<std::string> settings = {"--set", "data.kafka.bootstrap_servers=\"" + bootstrap + "\"",
                                "--set", "data.kafka.record_ids=true",
                                "--set", "data.kafka.shuffle_buffer=0",
                                "--set", "data.kafka.idle_timeout_s=3",
                                "--set", "data.kafka.properties={\"session.timeout.ms\": \"3000\"}",
                                "--set", "training.steps=0",
                                "--set", "training.batch=1",
                                "--set", "training.eval_every=1000",
                                "--set", "training.checkpoint_every=100000"};
  a.insert(a.end(), settings.begin(), settings.end());
  return a;
}

nlohmann::json last_metrics_line(const fs::path& run_dir) {
  std::ifstream in(run_dir / "metrics.jsonl");
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.empty() ? nlohmann::json() : nlohmann::json::parse(last);
}

// A section of the manifest of checkpoint `step` (as a manifest stores it: a JSON object).
nlohmann::json checkpoint_section(const fs::path& run_dir, int step, const std::string& section) {
  for (auto& e : fs::directory_iterator(run_dir / "checkpoints")) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("ckpt-") || std::stoi(name.substr(5)) != step) continue;
    std::ifstream in(e.path() / "manifest.json");
    return nlohmann::json::parse(in).at("sections").at(section);
  }
  ADD_FAILURE() << "no checkpoint " << step << " in " << run_dir;
  return {};
}

// Per run (in file order), per worker file: the lines "step id id ...". A line "rewind S"
// (the job rolled back in place to step S) drops the worker's lines of that run for steps
// after S: their updates went with the servers' rollback.
struct AppliedIds {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> runs;  // (step, id)
  int rewinds = 0;
};
AppliedIds read_ids(const fs::path& run_dir, int workers) {
  AppliedIds out;
  for (int w = 0; w < workers; ++w) {
    std::ifstream in(run_dir / "stream_ids" / ("worker-" + std::to_string(w) + ".txt"));
    std::string line;
    int run = -1;
    std::size_t begin = 0;  // this worker's first entry in out.runs[run]
    while (std::getline(in, line)) {
      if (line.starts_with("run ")) {
        ++run;
        if (static_cast<int>(out.runs.size()) <= run) out.runs.resize(run + 1);
        begin = out.runs[run].size();
        continue;
      }
      if (line.starts_with("rewind ")) {
        const std::int64_t to = std::stoll(line.substr(7));
        auto& entries = out.runs[run];
        entries.erase(std::remove_if(entries.begin() + static_cast<std::ptrdiff_t>(begin), entries.end(),
                                     [to](const auto& e) { return e.first > to; }),
                      entries.end());
        ++out.rewinds;
        continue;
      }
      std::istringstream ls(line);
      std::int64_t step = 0, id = 0;
      ls >> step;
      while (ls >> id) out.runs[run].push_back({step, id});
    }
  }
  return out;
}

TEST(StreamTraining, TwoWorkersConsumeEveryEventOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
  std::atomic<bool> stop{false};
  const std::int64_t n = 3000;
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), n, 0), stop).delivered, n);
  fs::path out = fresh_dir("once");
  TribRun r = run_trib(job_args(broker.bootstrap(), {"train", kExample, "--output", out.string()}), std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  AppliedIds ids = read_ids(out, 2);
  ASSERT_EQ(ids.runs.size(), 1u) << r.output;
  std::map<std::int64_t, int> seen;
  for (auto [step, id] : ids.runs[0]) ++seen[id];
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n) << "every event trained on";
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  EXPECT_NE(r.output.find("stream step"), std::string::npos) << r.output;
  fs::remove_all(out);
}

// Every strategy trains on a stream for a fixed number of steps (an idle end needs async:
// job_config_test). Enough events for both workers, so no worker waits for data.
TEST(StreamTraining, LockstepStrategiesTrainOnAStream) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
  std::atomic<bool> stop{false};
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), 4000, 0), stop).delivered, 4000);
  for (std::string strategy : {"strategy.mode=sync", "strategy.mode=averaging", "strategy.name=allreduce"}) {
    fs::path out = fresh_dir("lockstep");
    std::vector<std::string> a = job_args(broker.bootstrap(), {"train", kExample, "--output", out.string()});
    a.insert(a.end(), {"--set", strategy, "--set", "training.steps=30", "--set", "training.batch=16", "--set",
                       "data.kafka.idle_timeout_s=0", "--set", "data.kafka.group_id=" + strategy.substr(9)});
    TribRun r = run_trib(a, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << strategy << "\n" << r.output;
    EXPECT_NE(r.output.find("worker 1 trained on 480 events"), std::string::npos) << strategy << "\n" << r.output;
    fs::remove_all(out);
  }
}

// Ended by idleness, workers stop at different steps (their partitions hold different
// numbers of events); the parameter servers stop waiting for the one that finished.
TEST(StreamTraining, ParameterServerModesEndWhenTheStreamGoesQuiet) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
  std::atomic<bool> stop{false};
  const std::int64_t n = 3000;
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), n, 0), stop).delivered, n);
  for (std::string mode : {"sync", "bounded"}) {
    fs::path out = fresh_dir("quiet");
    std::vector<std::string> a = job_args(broker.bootstrap(), {"train", kExample, "--output", out.string()});
    a.insert(a.end(), {"--set", "strategy.mode=" + mode, "--set", "data.kafka.group_id=quiet-" + mode});
    TribRun r = run_trib(a, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.output;
    std::int64_t trained = 0;
    std::smatch m;
    for (auto it = r.output.cbegin();
         std::regex_search(it, r.output.cend(), m, std::regex("worker \\d trained on (\\d+) events")); it = m.suffix().first)
      trained += std::stoll(m[1]);
    EXPECT_EQ(trained, n) << mode << "\n" << r.output;  // batch 1: every event
    fs::remove_all(out);
  }
}

// Every event on one partition: one worker's partitions are empty, so it goes idle and ends
// at once while the other trains on past several periodic checkpoints. Both ways round (range
// assignment gives partitions 0 and 3 to different workers): when the chief is the idle one,
// the other worker's checkpoint barriers must not wait for a chief that stopped stepping
// (they did, until the chief's 10-minute wait for the others ran out).
TEST(StreamTraining, AWorkerWhoseStreamEndsFirstDoesNotHoldUpTheOthersCheckpoints) {
  for (std::int32_t partition : {0, 3}) {
    stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
    std::atomic<bool> stop{false};
    const std::int64_t n = 1500;
    stream::ProduceOptions o = produce_options(broker.bootstrap(), n, 0);
    o.partition = partition;
    ASSERT_EQ(stream::produce_events(o, stop).delivered, n);
    fs::path out = fresh_dir("one-partition");
    std::vector<std::string> a = job_args(broker.bootstrap(), {"train", kExample, "--output", out.string()});
    a.insert(a.end(), {"--set", "training.checkpoint_every=50", "--set", "data.kafka.idle_timeout_s=1"});
    TribRun r = run_trib(a, std::chrono::seconds(90));
    ASSERT_EQ(r.exit_code, 0) << "events on partition " << partition << "\n" << r.output;
    AppliedIds ids = read_ids(out, 2);
    std::set<std::int64_t> seen;
    for (auto [step, id] : ids.runs.at(0)) EXPECT_TRUE(seen.insert(id).second) << "event " << id << " twice";
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n) << "events on partition " << partition << "\n" << r.output;
    fs::remove_all(out);
  }
}

// Waits (polling, up to 60 s) until a line of `file` starts with `prefix`.
void wait_for_line(const fs::path& file, const std::string& prefix) {
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with(prefix)) return;
  }
}

// When a step line follows the `nth` line starting with `marker` in a worker's id record
// ("rewind ": its rewind in place; "run ": its process's start), polled; the epoch after 60 s.
std::chrono::steady_clock::time_point first_step_after(const fs::path& file, const std::string& marker, int nth) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream in(file);
    std::string line;
    int seen = 0;
    while (std::getline(in, line)) {
      if (line.starts_with(marker)) ++seen;
      else if (seen >= nth && !line.empty() && std::isdigit(static_cast<unsigned char>(line[0])))
        return std::chrono::steady_clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return {};
}

// Half the events are in the topic before the job starts; it is killed (SIGKILL to the
// launcher, whose children follow it) once a periodic checkpoint exists, long before the
// 3 s of idleness that would end it; the other half is produced while nothing runs; the
// resumed job must apply exactly the events after the checkpoint's positions. A periodic
// checkpoint is a barrier at the same step on every worker, so "applied up to the
// checkpoint" is every worker's lines up to that step (the final checkpoint is not one).
// `settings` go after the test's own (a shuffle buffer, a batch size); `every` is the
// checkpoint interval in steps.
// `scattered`: the checkpoint must hold applied offsets above a low watermark (a shuffle
// buffer was mid-window), so the test exercises what it is about.
// `kill_after` (ps0 only): how long after that checkpoint the server is killed.
// `victim`: "launcher" (SIGKILL to `trib train`; its children follow); "worker0": the job
// loses its chief and restarts all its processes from the newest checkpoint by itself, then
// ends when the stream goes idle; or "ps0": the job loses its server, which is relaunched and
// restored from the newest checkpoint while the workers rewind their Kafka positions in
// place (no worker restarts), and goes on until the stream goes idle. Either way the second
// half then goes to a --resume as before.
void expect_kill_and_resume_exactly_once(const std::string& name, std::vector<std::string> settings, int every,
                                         std::int64_t batch, bool scattered, const std::string& victim = "launcher",
                                         std::chrono::milliseconds kill_after = {}) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
  const std::int64_t half = 4000, n = 2 * half;
  std::atomic<bool> stop{false};
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), half, 0), stop).delivered, half);
  fs::path out = fresh_dir(name);
  bool killed = false;
  auto extra = [&](std::vector<std::string> a) {  // after job_args: the last --set wins
    a = job_args(broker.bootstrap(), a);
    a.insert(a.end(), {"--set", "training.checkpoint_every=" + std::to_string(every), "--set",
                       "training.batch=" + std::to_string(batch)});
    a.insert(a.end(), settings.begin(), settings.end());
    return a;
  };
  // "ps0-at-barrier": worker 1 is stopped (SIGSTOP) after the first checkpoint, the chief goes
  // on to the next one and waits at its barrier for worker 1's offer; the server is killed
  // then, and worker 1 continued: its step finds the server lost, and the chief's wait must
  // give way to the restore.
  const bool at_barrier = victim == "ps0-at-barrier";
  const std::string process = at_barrier ? "ps0" : victim;
  const bool in_place = process == "ps0";
  pid_t pid = 0, worker1 = 0;
  const std::regex started_victim("started .*" + process + R"( \(pid (\d+)\))");
  const std::regex started_worker1(R"(started .*worker1 \(pid (\d+)\))");
  using Clock = std::chrono::steady_clock;
  Clock::time_point killed_at, rewound_at;
  std::thread watcher;
  TribRun first = run_trib(extra({"train", kExample, "--output", out.string()}), std::chrono::seconds(90),
                      [&](const std::string& line, testing::Trib& p) {
                        std::smatch m;
                        if (pid == 0 && std::regex_search(line, m, started_victim))
                          pid = static_cast<pid_t>(std::stol(m[1]));
                        if (worker1 == 0 && std::regex_search(line, m, started_worker1))
                          worker1 = static_cast<pid_t>(std::stol(m[1]));
                        if (!killed && at_barrier && newest_checkpoint(out) >= every) {
                          killed = true;
                          ASSERT_NE(pid, 0) << "no pid for ps0 in the output";
                          ASSERT_NE(worker1, 0) << "no pid for worker1 in the output";
                          ::kill(worker1, SIGSTOP);
                          watcher = std::thread([&, server = pid, stopped = worker1] {
                            // The chief's step at the next checkpoint is applied: it waits at the barrier.
                            wait_for_line(out / "stream_ids" / "worker-0.txt", std::to_string(2 * every) + " ");
                            std::this_thread::sleep_for(std::chrono::milliseconds(100));
                            killed_at = Clock::now();
                            ::kill(server, SIGKILL);
                            std::this_thread::sleep_for(std::chrono::milliseconds(200));
                            ::kill(stopped, SIGCONT);
                            rewound_at = first_step_after(out / "stream_ids" / "worker-0.txt", "rewind ", 1);
                          });
                          return;
                        }
                        if (!killed && newest_checkpoint(out) >= 2 * every) {
                          killed = true;
                          if (victim != "launcher") {
                            // `kill_after` past the checkpoint, so that the workers have steps to redo;
                            // then measured, not asserted: the kill to the chief's next applied step
                            // (after its rewind in place, or in the restarted job).
                            ASSERT_NE(pid, 0) << "no pid for " << victim << " in the output";
                            watcher = std::thread([&, victim_pid = pid] {
                              std::this_thread::sleep_for(kill_after);
                              killed_at = Clock::now();
                              ::kill(victim_pid, SIGKILL);
                              rewound_at = first_step_after(out / "stream_ids" / "worker-0.txt",
                                                            in_place ? "rewind " : "run ", in_place ? 1 : 2);
                            });
                            return;
                          }
                          p.signal(SIGKILL);
                        }
                      });
  if (watcher.joinable()) watcher.join();
  ASSERT_TRUE(killed) << first.output;
  int checkpoint = -1;  // the one the lost incarnation's events are counted up to
  if (in_place) {
    // In place: the server relaunched and restored, both workers rewound, none restarted.
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_NE(first.output.find("local cluster: ps0 relaunched"), std::string::npos) << first.output;
    EXPECT_EQ(first.output.find("restarting the job"), std::string::npos) << first.output;
    EXPECT_NE(first.output.find("parameter server restores: 1"), std::string::npos) << first.output;
    std::smatch m;
    for (int w = 0; w < 2; ++w)
      EXPECT_NE(first.output.find("worker " + std::to_string(w) + ": Kafka positions rewound in place"),
                std::string::npos)
          << first.output;
    ASSERT_TRUE(std::regex_search(first.output, m, std::regex(R"(every server reloaded checkpoint \S+ckpt-0*(\d+) )")))
        << first.output;
    checkpoint = std::stoi(m[1]);
    if (at_barrier) {
      EXPECT_EQ(checkpoint, every) << first.output;
      EXPECT_NE(first.output.find("no checkpoint: a worker found a parameter server lost"), std::string::npos)
          << "the chief's barrier gave way\n" << first.output;
    }
    // Not a timing assertion: what a reader of the test log wants to know.
    if (std::regex_search(first.output, m, std::regex(R"(steps redone in all: (\d+))")))
      std::printf("[ measured ] in-place rewind: steps redone %s, kill to the chief's next applied step %.2f s\n",
                  m[1].str().c_str(),
                  rewound_at == Clock::time_point{} ? -1.0
                                                    : std::chrono::duration<double>(rewound_at - killed_at).count());
  } else if (victim == "worker0") {
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_NE(first.output.find("trib: error: worker0 "), std::string::npos) << first.output;
    EXPECT_NE(first.output.find("a stream job restarts all its processes"), std::string::npos) << first.output;
    EXPECT_NE(first.output.find("restarting the job from its newest checkpoint (1 of 3)"), std::string::npos)
        << first.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(first.output, m, std::regex(R"(resumed from \S+ckpt-0*(\d+) at step)")))
        << first.output;
    checkpoint = std::stoi(m[1]);
    std::printf("[ measured ] whole-job restart: kill to the chief's next applied step %.2f s\n",
                rewound_at == Clock::time_point{} ? -1.0 : std::chrono::duration<double>(rewound_at - killed_at).count());
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    checkpoint = newest_checkpoint(out);
    // The section's readable summary lists its fields, "kafka.transactions.0.applied=..." among them.
    const nlohmann::json kafka = checkpoint_section(out, checkpoint, "kafka");
    if (scattered) {
      EXPECT_NE(kafka.value("summary", "").find(".applied="), std::string::npos) << kafka.dump();
    }
  }
  ASSERT_EQ(checkpoint % every, 0) << "the kill came after the final checkpoint\n" << first.output;
  stream::ProduceOptions rest = produce_options(broker.bootstrap(), half, 0);
  rest.generator.first_id = half;
  rest.generator.seed = 2;
  ASSERT_EQ(stream::produce_events(rest, stop).delivered, half);
  TribRun second = run_trib(extra({"train", kExample, "--resume", out.string()}), std::chrono::seconds(90));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("Kafka offsets restored"), std::string::npos) << second.output;

  AppliedIds ids = read_ids(out, 2);
  // The restarted incarnation writes a run of its own; workers rewound in place do not.
  ASSERT_EQ(ids.runs.size(), victim == "worker0" ? 3u : 2u);
  if (in_place) {
    EXPECT_EQ(ids.rewinds, 2) << "each worker's record says where it rewound";
  }
  std::map<std::int64_t, int> seen;
  for (auto [step, id] : ids.runs[0])
    if (step <= checkpoint || in_place) ++seen[id];
  const std::int64_t before = static_cast<std::int64_t>(seen.size());
  EXPECT_GE(before, 2 * checkpoint * batch) << "both workers' steps up to the checkpoint";
  for (std::size_t run = 1; run < ids.runs.size(); ++run)
    for (auto [step, id] : ids.runs[run]) ++seen[id];
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n) << "every event applied, " << before << " up to checkpoint " << checkpoint;
  int reported = 0;
  for (std::int64_t id = 0; id < n && static_cast<std::int64_t>(seen.size()) != n && reported < 20; ++id)
    if (!seen.count(id)) ADD_FAILURE() << "event " << id << " never applied (" << ++reported << ")";
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  // The counts continue across the resume: the summary of the resumed run covers both.
  const nlohmann::json summary = last_metrics_line(out);
  EXPECT_EQ(summary["split"], "stream_summary") << summary.dump();
  EXPECT_EQ(summary["trained"], n) << summary.dump();
  EXPECT_EQ(summary["consumed"], n) << summary.dump();
  fs::remove_all(out);
}

TEST(StreamTraining, AJobKilledMidStreamResumesExactlyOnce) {
  expect_kill_and_resume_exactly_once("resume", {}, 250, 1, false);
}

// The shipped example's shuffle buffer: records read into a worker's window but not trained
// at the checkpoint are trained after the restart, and the window's trained ones are not.
TEST(StreamTraining, AJobWithTheExamplesShuffleBufferResumesExactlyOnce) {
  expect_kill_and_resume_exactly_once("resume-shuffled", {"--set", "data.kafka.shuffle_buffer=512"}, 100, 4, true);
}

// A lost parameter server is relaunched and restored from the newest checkpoint while both
// workers rewind their Kafka positions in place (their processes go on): every event
// exactly once relative to the restored model, across the rewind and a --resume.
TEST(StreamTraining, AJobThatLosesItsServerRewindsItsKafkaPositionsInPlaceExactlyOnce) {
  expect_kill_and_resume_exactly_once("rewind-lost-server", {}, 100, 1, false, "ps0", std::chrono::milliseconds(300));
}

// The same with the server killed while the chief waits at a checkpoint's barrier for a
// worker whose next step then finds the server lost: the barrier gives way to the restore
// (no deadlock), that checkpoint is not written, and the job rewinds to the one before.
// Worker 1 is stopped meanwhile for a few seconds: the group's session and the peer timeout
// are set above that.
TEST(StreamTraining, AJobThatLosesItsServerWhileAtACheckpointBarrierRewindsInPlaceExactlyOnce) {
  expect_kill_and_resume_exactly_once("rewind-at-barrier",
                                      {"--set", "data.kafka.properties={\"session.timeout.ms\": \"20000\"}", "--set",
                                       "cluster.peer_timeout_ms=30000"},
                                      100, 1, false, "ps0-at-barrier");
}

// All events on one partition: one worker's stream is idle from the start and it ends (the
// chief: it waits in its finish for the other; the other: at its final barrier). The server
// is lost while the other still trains: the job is restored in place, the one training
// rewinds, and the one that had ended takes the restore at its end (its claim goes back to
// the checkpoint's; it had trained nothing since). Every event once, both assignments.
TEST(StreamTraining, AWorkerThatHadEndedTakesAnInPlaceRestoreAtItsEnd) {
  for (std::int32_t partition : {0, 3}) {
    stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
    std::atomic<bool> stop{false};
    const std::int64_t n = 2000;
    stream::ProduceOptions o = produce_options(broker.bootstrap(), n, 0);
    o.partition = partition;
    ASSERT_EQ(stream::produce_events(o, stop).delivered, n);
    fs::path out = fresh_dir("ended-then-restored");
    std::vector<std::string> a = job_args(broker.bootstrap(), {"train", kExample, "--output", out.string()});
    a.insert(a.end(), {"--set", "training.checkpoint_every=100", "--set", "data.kafka.idle_timeout_s=1"});
    const std::regex started_ps0(R"(started ps0 \(pid (\d+)\))");
    pid_t server = 0;
    std::thread killer;
    TribRun r = run_trib(a, std::chrono::seconds(120), [&](const std::string& line, testing::Trib&) {
      std::smatch m;
      if (server == 0 && std::regex_search(line, m, started_ps0)) {
        server = static_cast<pid_t>(std::stol(m[1]));
        // Once the worker that has the events is 300 steps in (the other has ended by then).
        killer = std::thread([&out, pid = server] {
          for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
               std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
            bool there = false;
            for (int w = 0; w < 2 && !there; ++w) {
              std::ifstream in(out / "stream_ids" / ("worker-" + std::to_string(w) + ".txt"));
              for (std::string l; !there && std::getline(in, l);) there = l.starts_with("300 ");
            }
            if (there) break;
          }
          ::kill(pid, SIGKILL);
        });
      }
    });
    if (killer.joinable()) killer.join();
    ASSERT_EQ(r.exit_code, 0) << "events on partition " << partition << "\n" << r.output;
    EXPECT_NE(r.output.find("parameter server restores: 1"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("after this worker's last step"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
    AppliedIds ids = read_ids(out, 2);
    ASSERT_EQ(ids.runs.size(), 1u) << "no process restarted";
    std::map<std::int64_t, int> seen;
    for (auto [step, id] : ids.runs[0]) ++seen[id];
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n) << "events on partition " << partition << "\n" << r.output;
    for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
    EXPECT_EQ(last_metrics_line(out)["trained"], n);
    fs::remove_all(out);
  }
}

// The fallback: a lost chief of a job on the consumer group (data.kafka.assignment: group; it
// owns the checkpoints; it is not relaunched) restarts the whole stream job from its newest
// checkpoint: every event exactly once, across the restart and a --resume. (With the job
// assigning partitions the chief is relaunched in place: stream_ps_worker_loss_test.cc.)
TEST(StreamTraining, AJobThatLosesItsChiefRestartsFromItsCheckpointExactlyOnce) {
  expect_kill_and_resume_exactly_once("resume-lost-chief", {"--set", "data.kafka.assignment=group"}, 100, 1, false,
                                      "worker0", std::chrono::milliseconds(300));
}

// The shipped example as it is (shuffle buffer 512, batch 64), ended by idleness: every
// event is trained once, the last batches short; metrics.jsonl holds both workers' rows and
// a summary that accounts for every record, the poison one included.
TEST(StreamTraining, TheShippedExampleTrainsEveryEventOfAnIdleStream) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
  std::atomic<bool> stop{false};
  const std::int64_t n = 3001;
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), n, 0), stop).delivered, n);
  {
    stream::KafkaConfig kafka;
    kafka.bootstrap_servers = broker.bootstrap();
    stream::KafkaProducer producer(kafka);
    producer.produce("transactions", "poison", R"({"id": 99999, "amount": "a lot"})", 0, {}, 0);
    ASSERT_TRUE(producer.flush(std::chrono::seconds(5)));
  }
  fs::path out = fresh_dir("shipped");
  std::vector<std::string> a = job_args(broker.bootstrap(), {"train", kExample, "--output", out.string()});
  a.insert(a.end(), {"--set", "data.kafka.shuffle_buffer=512", "--set", "training.batch=64", "--set",
                     "training.eval_every=10"});
  TribRun r = run_trib(a, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  AppliedIds ids = read_ids(out, 2);
  ASSERT_EQ(ids.runs.size(), 1u) << r.output;
  std::map<std::int64_t, int> seen;
  for (auto [step, id] : ids.runs[0]) ++seen[id];
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n) << "every event trained on";
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";

  std::set<int> workers;
  std::ifstream in(out / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("split", "") == "stream") workers.insert(j["worker"].get<int>());
  }
  EXPECT_EQ(workers, (std::set<int>{0, 1})) << "both workers' rows";
  const nlohmann::json summary = last_metrics_line(out);
  EXPECT_EQ(summary["split"], "stream_summary") << summary.dump();
  EXPECT_EQ(summary["trained"], n) << summary.dump();
  EXPECT_EQ(summary["dead_lettered"], 1) << summary.dump();
  EXPECT_EQ(summary["consumed"], n + 1) << summary.dump();
  EXPECT_EQ(summary["workers"]["0"]["trained"].get<std::int64_t>() + summary["workers"]["1"]["trained"].get<std::int64_t>(), n);
  EXPECT_NE(r.output.find("stream totals: consumed " + std::to_string(n + 1)), std::string::npos) << r.output;
  fs::remove_all(out);
}

// One process, no cluster: the bad-input checks need no parameter server.
std::vector<std::string> local(std::vector<std::string> a) {
  a.insert(a.end(), {"--set", "cluster=null", "--set", "strategy.name=local", "--set", "data.kafka.connect_timeout_s=2"});
  return a;
}

TEST(StreamTraining, BadInputIsReportedAndKeepsTheCheckpoint) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
  std::atomic<bool> stop{false};
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), 500, 0), stop).delivered, 500);
  fs::path out = fresh_dir("bad");
  TribRun good = run_trib(local(job_args(broker.bootstrap(), {"train", kExample, "--output", out.string(), "--set",
                                                         "training.batch=50", "--set", "data.kafka.idle_timeout_s=1"})),
                     std::chrono::seconds(30));
  ASSERT_EQ(good.exit_code, 0) << good.output;
  const int saved = newest_checkpoint(out);
  ASSERT_GT(saved, 0) << good.output;

  TribRun unreachable = run_trib(local(job_args("127.0.0.1:1", {"train", kExample, "--resume", out.string()})),
                            std::chrono::seconds(20));
  EXPECT_NE(unreachable.exit_code, 0);
  EXPECT_NE(unreachable.output.find("127.0.0.1:1"), std::string::npos) << unreachable.output;
  EXPECT_NE(unreachable.output.find("unreachable"), std::string::npos) << unreachable.output;
  EXPECT_LT(unreachable.seconds, 15);

  TribRun no_topic = run_trib(local(job_args(broker.bootstrap(), {"train", kExample, "--resume", out.string(), "--set",
                                                             "data.kafka.topic=nonexistent"})),
                         std::chrono::seconds(20));
  EXPECT_NE(no_topic.exit_code, 0);
  EXPECT_NE(no_topic.output.find("'nonexistent' does not exist"), std::string::npos) << no_topic.output;

  // New records, for the schema check to read.
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), 100, 0), stop).delivered, 100);
  TribRun bad_schema = run_trib(local(job_args(broker.bootstrap(), {"train", kExample, "--resume", out.string(), "--set",
                                                               "data.schema.features=[amount,balance,hour,distance_km,velocity_1h,card_present,foreign]",
                                                               "--set", "data.schema.log1p=[amount]"})),
                           std::chrono::seconds(20));
  EXPECT_NE(bad_schema.exit_code, 0);
  EXPECT_NE(bad_schema.output.find("schema names field 'balance'"), std::string::npos) << bad_schema.output;

  EXPECT_EQ(newest_checkpoint(out), saved) << "no bad input loses the checkpoint";
  fs::remove_all(out);
}

// A record whose amount overflows a float makes a non-finite gradient: the loop skips that
// step and tells the stream hooks (TrainingHooks::on_skip), so the summary counts the event
// skipped, and the source holds it as consumed, so that --resume does not read it again.
TEST(StreamTraining, ASkippedStepIsCountedAndNotReadAgainAfterAResume) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 4}}});
  std::atomic<bool> stop{false};
  const std::int64_t n = 300, more = 40;
  ASSERT_EQ(stream::produce_events(produce_options(broker.bootstrap(), n, 0), stop).delivered, n);
  {
    stream::KafkaConfig kafka;
    kafka.bootstrap_servers = broker.bootstrap();
    stream::KafkaProducer producer(kafka);
    producer.produce("transactions", "overflow",
                     R"({"id": 99999, "amount": 1e39, "merchant_category": 1, "hour": 3, "distance_km": 1,)"
                     R"( "velocity_1h": 1, "card_present": 1, "foreign": 0, "label": 0})",
                     0, {}, 0);
    ASSERT_TRUE(producer.flush(std::chrono::seconds(5)));
  }
  fs::path out = fresh_dir("skipped");
  TribRun first = run_trib(local(job_args(broker.bootstrap(), {"train", kExample, "--output", out.string(), "--set",
                                                              "data.kafka.idle_timeout_s=1"})),
                           std::chrono::seconds(60));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("non-finite gradient, step skipped"), std::string::npos) << first.output;
  nlohmann::json summary = last_metrics_line(out);
  EXPECT_EQ(summary["split"], "stream_summary") << summary.dump();
  EXPECT_EQ(summary["skipped"], 1) << summary.dump();
  EXPECT_EQ(summary["trained"], n) << summary.dump();
  EXPECT_EQ(summary["consumed"], n + 1) << summary.dump();

  stream::ProduceOptions rest = produce_options(broker.bootstrap(), more, 0);
  rest.generator.first_id = n;
  ASSERT_EQ(stream::produce_events(rest, stop).delivered, more);
  TribRun resumed = run_trib(local(job_args(broker.bootstrap(), {"train", kExample, "--resume", out.string(), "--set",
                                                                "data.kafka.idle_timeout_s=1"})),
                             std::chrono::seconds(60));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("non-finite gradient"), std::string::npos) << "the skipped record was read again\n"
                                                                           << resumed.output;
  summary = last_metrics_line(out);
  EXPECT_EQ(summary["skipped"], 1) << summary.dump();
  EXPECT_EQ(summary["trained"], n + more) << summary.dump();
  EXPECT_EQ(summary["consumed"], n + more + 1) << summary.dump();
  AppliedIds ids = read_ids(out, 1);
  ASSERT_EQ(ids.runs.size(), 2u);
  std::map<std::int64_t, int> seen;
  for (const auto& run : ids.runs)
    for (auto [step, id] : run) ++seen[id];
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n + more);
  EXPECT_EQ(seen.count(99999), 0u) << "the overflowing event was never applied";
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
