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
          "--set", "training.train_metrics=false", "--set", "data.train_subset=48000", "--set", "data.test_subset=2000",
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
}  // namespace trib::testing
