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

// Worker `joiner` (2 unless said; 0: the chief) of a 3-worker `trib coordinator` job (`run`: its
// run directory) was killed once its step 2 * `every` + 25 was applied and started again;
// `members`: the workers by index, the process started again in the joiner's place, `out` the
// transcript. The joiner joined a generation whose group of 3
// rolled back to one checkpoint on every member with the same variables (crc32c); the survivors
// before it went on from their own step (past 2 * `every`, never back to a checkpoint), and every
// kept event (all workers' up to the earlier of that step and the join's checkpoint, the
// survivors' up to the join's checkpoint, all three's after it) was trained exactly once
// (expect_kept_once).
inline void expect_rejoined_once(const fs::path& run, int steps, int every, const std::vector<testing::Trib*>& members,
                                 const std::string& out, int joiner = 2) {
  std::smatch m;
  ASSERT_TRUE(std::regex_search(members[joiner]->output(), m, std::regex(R"(joined the allreduce group as generation (\d+))")))
      << out;
  const std::string generation = m[1];
  std::string crc;
  std::int64_t rejoined_at = -1;
  for (testing::Trib* p : members) {
    SCOPED_TRACE(p->name());
    const std::string text = p->output();
    ASSERT_TRUE(std::regex_search(
        text, m,
        std::regex(fmt::format(R"(allreduce group {} \(workers 0, 1, 2\) rolled back to checkpoint (\d+) from step \d+ )"
                               R"(\(\d+ steps to redo\), variables crc32c ([0-9a-f]{{8}}); )",
                               generation))))
        << out;
    if (rejoined_at < 0) {
      rejoined_at = std::stoll(m[1]);
      crc = m[2];
      std::printf("[ info ] %s\n", m[0].str().c_str());
    }
    EXPECT_EQ(std::stoll(m[1]), rejoined_at) << out;
    EXPECT_EQ(m[2], crc) << p->name() << " goes on from the group's variables";
  }
  // The step the survivors went on from, if they went on as 2 first (with all 3 workers'
  // progress of it, never back to a checkpoint); the lowest of them led them.
  std::vector<int> survivors;
  for (int w = 0; w < 3; ++w)
    if (w != joiner) survivors.push_back(w);
  std::int64_t lost_at = rejoined_at;
  if (std::regex_search(members[survivors[0]]->output(), m,
                        std::regex(fmt::format(R"(worker {0}: allreduce group \d+ \(workers {0}, {1}\) goes on from step )"
                                               R"((\d+) with the Kafka progress of that step of all 3 workers)",
                                               survivors[0], survivors[1]))))
    lost_at = std::stoll(m[1]);
  EXPECT_GE(lost_at, 2 * every) << out;
  EXPECT_EQ(out.find(fmt::format("(workers {}, {}) rolled back to checkpoint", survivors[0], survivors[1])),
            std::string::npos)
      << out;
  // The join's checkpoint may be before the step the survivors went on from: its rollback then
  // undid the lost worker's steps after it too.
  const std::int64_t kept_lost = std::min(lost_at, rejoined_at);

  std::map<std::int64_t, int> seen;
  for (int w : survivors) add_kept_ids(run, w, steps, seen);
  add_kept_ids(run, joiner, steps, seen, kept_lost);  // the started-again process's record: a second "run" line
  expect_kept_once(run, members[0]->output(), seen,
                   3 * kept_lost + 2 * (rejoined_at - kept_lost) + 3 * (steps - rejoined_at), steps);
}

}  // namespace trib::stream_e2e
