// Test support: `trib train` on the allreduce example as a local cluster of 3 workers, with a
// signal sent to worker 2 at its first progress line (printed once its step 1 is applied: a
// point in its own run, not a time), and reading the merged log line by line.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/trib_process.h"

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

// Runs the job, sending `signal` to worker 2 at its first progress line (after its step 1).
inline TribRun run_signalling_worker2(const std::vector<std::string>& args, int signal, bool& killed, std::string& pid) {
  return run_trib(args, std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("worker2 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (!killed && !pid.empty() && line.starts_with("[worker2] step 1/")) {
      ::kill(std::stoi(pid), signal);
      killed = true;
    }
  });
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

inline double final_accuracy(const std::string& output) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(output, m, std::regex("done: test accuracy ([0-9.]+)"))) << output;
  return m.empty() ? 0 : std::stod(m[1]);
}

}  // namespace trib::testing
