// Test support: `trib train` on the allreduce example as a local cluster of 3 workers, with a
// signal sent to a worker at a line of the launcher's output (worker 2: at its first progress
// line, printed once its step 1 is applied: a point in its own run, not a time), and reading the
// merged log line by line.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"

namespace trib::testing {

namespace fs = std::filesystem;

inline const std::string kAllreduce = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_allreduce.yaml";

// Long enough (1000 steps) for a relaunched process to start, read its data and join while the
// others still train, on a loaded machine.
inline std::vector<std::string> job(const fs::path& out, int max_restarts) {
  return {"train", kAllreduce, "--output", out.string(), "--set", "cluster.workers=3", "--set", "threads.intra=1",
          "--set", "training.train_metrics=false", "--set", "data.train_subset=48000", "--set", "data.test_subset=10000",
          "--set", "training.epochs=4", "--set", "training.batch=64", "--set",
          fmt::format("cluster.max_restarts={}", max_restarts)};
}

// Runs the job, sending `signal` to worker `index` at the first line of the launcher's output
// that matches `at`; `pid` is then the signalled process's, and `after` runs right after.
inline TribRun run_signalling_worker(const std::vector<std::string>& args, int index, const std::regex& at, int signal,
                                     bool& killed, std::string& pid, const std::function<void()>& after = {}) {
  const std::regex pid_line(fmt::format("worker{} \\(pid ([0-9]+)\\)", index));
  return run_trib(args, std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, pid_line)) pid = m[1];
    if (!killed && !pid.empty() && std::regex_search(line, at)) {
      ::kill(std::stoi(pid), signal);
      killed = true;
      if (after) after();
    }
  });
}

// Runs the job, sending `signal` to worker 2 at its first progress line (after its step 1).
inline TribRun run_signalling_worker2(const std::vector<std::string>& args, int signal, bool& killed, std::string& pid) {
  return run_signalling_worker(args, 2, std::regex("^\\[worker2\\] step 1/"), signal, killed, pid);
}

// The captures of the first line of `output` matching `pattern` (the whole match first);
// empty if none does. Line by line: std::regex on a whole transcript recurses too deep.
inline std::vector<std::string> find_line(const std::string& output, const std::regex& pattern) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, pattern)) continue;
    std::vector<std::string> out;
    for (const auto& sub : m) out.push_back(sub.str());
    return out;
  }
  return {};
}

// A chief relaunched after the run's last step: it joined the 3 workers at `last_step` with
// the members' final state (its "joined" checksum equals each other worker's hand-over line),
// and the newest checkpoint and the last evaluation row are at `last_step`.
inline void expect_chief_ends_with_the_final_state(const std::string& output, const fs::path& out, int last_step) {
  const std::vector<std::string> joined = find_line(
      output, std::regex(fmt::format(R"(\[worker0\] joined the allreduce group as generation ([0-9]+): rank 0 of 3; )"
                                     R"(starts at step {} with rank [12]'s variables \(crc32c ([0-9a-f]{{8}})\))",
                                     last_step)));
  ASSERT_FALSE(joined.empty()) << output;
  for (int w : {1, 2}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::vector<std::string> m = find_line(
        output, std::regex(fmt::format(R"(\[worker{}\] step {}: the run's last step is done; .*the group went on as )"
                                       R"(generation {} with 3 workers .*variables crc32c ([0-9a-f]{{8}}))",
                                       w, last_step, joined[1])));
    ASSERT_FALSE(m.empty()) << output;
    EXPECT_EQ(m[1], joined[2]) << "the relaunched chief ends the run with the members' variables";
  }
  EXPECT_EQ(newest_checkpoint(out), last_step) << output;
  const std::vector<int> rows = test_rows(out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back(), last_step);
}

}  // namespace trib::testing
