// The job the restore tests kill a process of (a server: server_restore_test.cc; the chief:
// chief_relaunch_test.cc), and the accuracy its run reports.
#pragma once

#include <signal.h>

#include <filesystem>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"

namespace trib::testing {

inline const std::string kPsJob = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

// 2 servers, 3 async workers, 8 epochs of a 24,000-example subset (62 steps an epoch, 496 in
// all); the chief evaluates on 2,000 test examples and checkpoints every 20 steps.
inline std::vector<std::string> restore_job(const std::filesystem::path& out) {
  return {"train", kPsJob, "--output", out.string(), "--set", "threads.intra=1", "--set",
          "training.train_metrics=false", "--set", "data.train_subset=24000", "--set", "data.test_subset=10000",
          "--set", "training.epochs=8", "--set", "cluster.ps=2", "--set", "cluster.workers=3", "--set",
          "training.eval_every=20", "--set", "training.checkpoint_every=20"};
}

// Runs restore_job(out), killing process `name` ("ps1", "worker0") with SIGKILL at the first
// line of the launcher's output that matches `at`; `killed` is then its pid ("" if it was never
// killed), and `after_kill` runs right after the signal.
inline TribRun run_killing(const std::filesystem::path& out, const std::string& name, const std::regex& at,
                           std::chrono::seconds limit, std::string& killed,
                           const std::function<void()>& after_kill = {}) {
  std::string pid;
  killed.clear();
  return run_trib(restore_job(out), limit, [&](const std::string& line, Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex(name + " \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (killed.empty() && !pid.empty() && std::regex_search(line, at)) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = pid;
      if (after_kill) after_kill();
    }
  });
}

}  // namespace trib::testing
