// Helpers of the allreduce stream e2e tests: the job's arguments, its events, and the per-worker
// record of applied event ids (data.kafka.record_ids) that checks "every event once".
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e/stream/stream_record.h"
#include "e2e/trib_process.h"
#include "trib/data/data_position.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/stream_position.h"

namespace trib::stream_e2e {

namespace fs = std::filesystem;
using testing::add_kept_ids;
using testing::offsets_done;
using testing::produce_options;
using testing::wait_for_step;

inline const std::string kExample = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";

// `trib train` of a `workers`-worker allreduce stream job (stream_record.h's settings).
inline std::vector<std::string> job_args(const std::string& bootstrap, const fs::path& out, const std::string& group,
                                         int steps, int every, int workers = 3) {
  std::vector<std::string> args{"train", kExample, "--output", out.string()};
  for (const std::string& o : testing::allreduce_stream_overrides(bootstrap, group, steps, every, workers)) {
    args.push_back("--set");
    args.push_back(o);
  }
  return args;
}

// The pid of worker `worker` from the launcher's "started ... workerW (pid P)" line; 0: not that line.
inline pid_t started_pid(const std::string& line, int worker) {
  std::smatch m;
  const std::regex started("started .*worker" + std::to_string(worker) + R"( \(pid (\d+)\))");
  return std::regex_search(line, m, started) ? static_cast<pid_t>(std::stol(m[1])) : 0;
}

// What run_losing_two saw: the job's run, and whether each kill landed.
struct TwoLosses {
  testing::TribRun run;
  bool lost3 = false;       // worker 3, mid-run
  bool lost_second = false;  // the second worker, where the fault held it
};

// A 4-worker allreduce stream job under TRIB_TEST_FAULT=`fault`: kill -9 to worker 3 at its
// step 2 * every + 25, then to worker `second` once the fault says it holds it (in the
// survivors' rollback). Survivors held in the rollback do not poll their consumers, for longer
// than the job's 3 s consumer-group session: the job, not the group, assigns the partitions
// (data.kafka.assignment: auto), so nothing evicts them. `extra`: more `--set` values.
inline TwoLosses run_losing_two(const std::string& bootstrap, const fs::path& out, const std::string& group, int steps,
                                int every, int second, const std::string& fault,
                                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = job_args(bootstrap, out, group, steps, every, 4);
  args.insert(args.end(), {"--set", "cluster.max_restarts=0"});  // the lost workers are not relaunched
  for (const std::string& e : extra) args.insert(args.end(), {"--set", e});
  const std::string held = "TRIB_TEST_FAULT: worker " + std::to_string(second) + " is held";
  pid_t second_pid = 0, worker3 = 0;
  std::atomic<bool> lost3{false};
  bool lost_second = false;
  std::thread killer;
  testing::TribRun r = testing::run_trib(
      args, std::chrono::seconds(240),
      [&](const std::string& line, testing::Trib&) {
        if (second_pid == 0) second_pid = started_pid(line, second);
        if (worker3 == 0 && (worker3 = started_pid(line, 3)) != 0)
          killer = std::thread([&, pid = worker3] {
            if (!wait_for_step(out / "stream_ids" / "worker-3.txt", 2 * every + 25)) return;
            lost3 = ::kill(pid, SIGKILL) == 0;
          });
        if (!lost_second && second_pid != 0 && line.find(held) != std::string::npos)
          lost_second = ::kill(second_pid, SIGKILL) == 0;
      },
      {{"TRIB_TEST_FAULT", fault}});
  if (killer.joinable()) killer.join();
  return {std::move(r), lost3, lost_second};
}

// Writes the tests' events to `bootstrap`: produce_options' 6000, ids numbered from 0.
inline void produce_all(const std::string& bootstrap) {
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = produce_options(bootstrap);
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
}

// kill -9 to worker `worker` of a `trib train` run once its id record (`run_dir`'s) has a line
// for step `step` (a step line is written once the step is applied): on_line() is the run's
// line callback, which learns the pid from the launcher's first start line of the worker;
// killed() once the run has ended.
class KillAtStep {
 public:
  KillAtStep(const fs::path& run_dir, int worker, std::int64_t step)
      : record_(run_dir / "stream_ids" / ("worker-" + std::to_string(worker) + ".txt")), worker_(worker), step_(step) {}
  KillAtStep(const KillAtStep&) = delete;
  KillAtStep& operator=(const KillAtStep&) = delete;
  ~KillAtStep() { join(); }

  std::function<void(const std::string&, testing::Trib&)> on_line() {
    return [this](const std::string& line, testing::Trib&) {
      if (killer_.joinable()) return;
      const pid_t pid = started_pid(line, worker_);
      if (pid == 0) return;
      killer_ = std::thread([this, pid] {
        if (wait_for_step(record_, step_)) killed_ = ::kill(pid, SIGKILL) == 0;
      });
    };
  }
  bool killed() {
    join();
    return killed_;
  }

 private:
  void join() {
    if (killer_.joinable()) killer_.join();
  }
  fs::path record_;
  int worker_;
  std::int64_t step_;
  std::thread killer_;
  std::atomic<bool> killed_{false};
};

// The run's kept events (`seen`, from add_kept_ids) are `expected` in number, each applied once;
// the last checkpoint (step `steps`) is the newest, and its Kafka offsets and the chief's
// totals line hold exactly them (events are numbered from offset 0).
inline void expect_kept_once(const fs::path& out, const std::string& output, const std::map<std::int64_t, int>& seen,
                             std::int64_t expected, int steps) {
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), expected) << output;
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  EXPECT_EQ(testing::newest_checkpoint(out), steps) << output;
  EXPECT_EQ(offsets_done(out, steps, "transactions"), expected)
      << "the final checkpoint's Kafka offsets hold exactly the events kept";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(stream totals: consumed \d+ trained (\d+))"))) << output;
  EXPECT_EQ(std::stoll(m[1]), expected) << output;
}

// Where an allreduce stream group that lost a worker of 3 (worker 2, or the chief) and took its
// relaunch back went on: lost_at, the step the survivors went on from after the loss (joined_at
// when the loss and the join made one group); joined_at, the step the group of 3 went on from.
struct Rejoined {
  std::int64_t lost_at = -1;
  std::int64_t joined_at = -1;
  std::int64_t join_table = 0;  // how many workers' progress the join went on from (3: the loss's)
};

// The join of relaunched worker `joiner` (2, or 0: the chief) in `texts` (texts[w]: member w's
// lines; one transcript of the whole job may stand for all three, every line checked names its
// worker), `all` the whole transcript: the group of 3 of the joiner's generation goes on from one
// step, the one the joiner starts at, on every member with the same variables (crc32c) and no
// checkpoint loaded (the old members' Kafka progress of the step before it, at most 1 step
// undone), the joiner reading partitions `joiner` and `joiner` + 3 (its share, assigned by the
// job); the survivors of the loss (the lowest leading) went on from their own step too, past 2 *
// `every`.
inline Rejoined expect_joined_at_group_step(const std::vector<std::string>& texts, const std::string& all, int every,
                                            int joiner = 2) {
  Rejoined at;
  std::smatch m;
  if (!std::regex_search(texts[joiner], m,
                         std::regex(fmt::format(R"(joined the allreduce group as generation (\d+): rank {} of 3; starts )"
                                                R"(at step (\d+) with rank \d+'s variables \(crc32c ([0-9a-f]{{8}})\))",
                                                joiner)))) {
    ADD_FAILURE() << "no join of worker " << joiner << "\n" << all;
    return at;
  }
  const std::string generation = m[1], crc = m[3];
  at.joined_at = std::stoll(m[2]);
  std::printf("[ info ] %s\n", m[0].str().c_str());
  std::vector<int> survivors;
  for (int w = 0; w < 3; ++w)
    if (w != joiner) survivors.push_back(w);
  for (int w = 0; w < 3; ++w) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    if (!std::regex_search(
            texts[w], m,
            std::regex(fmt::format(R"(worker {}: allreduce group {} \(workers 0, 1, 2\) goes on from step (\d+) with )"
                                   R"(the Kafka progress of that step of all ([23]) workers that took it, lost ones )"
                                   R"(included, variables crc32c ([0-9a-f]{{8}}); .*reads partitions (.*) \(assigned )"
                                   R"(by the job\))",
                                   w, generation)))) {
      ADD_FAILURE() << "the join's group did not go on from its step\n" << all;
      return {};
    }
    EXPECT_EQ(std::stoll(m[1]), at.joined_at) << all;
    if (w == 0) at.join_table = std::stoll(m[2]);
    EXPECT_EQ(std::stoll(m[2]), at.join_table) << all;
    EXPECT_EQ(m[3], crc) << "worker " << w << " goes on from the group's variables\n" << all;
    if (w == joiner) {
      EXPECT_EQ(m[4], fmt::format("{}, {}", joiner, joiner + 3)) << all;
      continue;
    }
    // The old members' strategy line: the group of 3 goes back at most the one step a member
    // may have applied alone.
    if (!std::regex_search(
            texts[w], m,
            std::regex(fmt::format(R"(went on as generation {} with 3 workers \(was [23]; this one rank {}\); back to )"
                                   R"(step (\d+) \((\d+) step\(s\) undone\))",
                                   generation, w)))) {
      ADD_FAILURE() << "no strategy line of the join\n" << all;
      return {};
    }
    EXPECT_EQ(std::stoll(m[1]), at.joined_at) << all;
    EXPECT_LE(std::stoll(m[2]), 1) << all;
    if (w == survivors[0]) std::printf("[ info ] the join undid %s step(s)\n", m[2].str().c_str());
  }
  at.lost_at = at.joined_at;
  if (std::regex_search(texts[survivors[0]], m,
                        std::regex(fmt::format(R"(worker {0}: allreduce group \d+ \(workers {0}, {1}\) goes on from step )"
                                               R"((\d+) with the Kafka progress of that step of all 3 workers)",
                                               survivors[0], survivors[1])))) {
    at.lost_at = std::stoll(m[1]);
    std::printf("[ info ] %s\n", m[0].str().c_str());
  }
  EXPECT_GE(at.lost_at, 2 * every) << all;
  EXPECT_GE(at.joined_at, at.lost_at) << all;
  EXPECT_EQ(all.find("rolled back to checkpoint"), std::string::npos) << "no member goes back to a checkpoint\n" << all;
  EXPECT_EQ(all.find("rolls back to the newest checkpoint"), std::string::npos) << all;
  return at;
}

// Worker `joiner` (2, or 0: the chief) of a 3-worker allreduce stream job (`run`: its run
// directory) was killed once its step 2 * `every` + 25 was applied and started again, and
// rejoined: texts[w], member w's lines (the started-again process's for the joiner; or the whole
// transcript for each), `all` the whole transcript. The join went on from the group's step
// (expect_joined_at_group_step), and every kept event (all workers' up to the step the survivors
// went on from, the survivors' up to the join's step, all three's after it) was trained exactly
// once (expect_kept_once, with the chief's lines in texts[0]: a relaunched chief's totals line
// holds the counts it took back from the group).
inline Rejoined expect_rejoined_once(const fs::path& run, int steps, int every, const std::vector<std::string>& texts,
                                     const std::string& all, int joiner = 2) {
  const Rejoined at = expect_joined_at_group_step(texts, all, every, joiner);
  if (at.lost_at < 0) return at;
  std::map<std::int64_t, int> seen;
  for (int w = 0; w < 3; ++w)
    if (w != joiner) add_kept_ids(run, w, steps, seen);
  // The lost process's lines after lost_at were not applied by the group; the started-again
  // process's record begins with a second "run" line, then its "rewind" to the join's step.
  add_kept_ids(run, joiner, steps, seen, at.lost_at);
  expect_kept_once(run, texts[0], seen, 3 * at.lost_at + 2 * (at.joined_at - at.lost_at) + 3 * (steps - at.joined_at),
                   steps);
  return at;
}

}  // namespace trib::stream_e2e
