// The job the restore tests kill a process of (a server: server_restore_test.cc; the chief:
// chief_relaunch_test.cc), and the accuracy its run reports.
#pragma once

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace trib::testing {

inline const std::string kPsJob = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";

// 2 servers, 3 async workers, 8 epochs of a 24,000-example subset (62 steps an epoch, 496 in
// all); the chief evaluates on 2,000 test examples and checkpoints every 20 steps.
inline std::vector<std::string> restore_job(const std::filesystem::path& out) {
  return {"train", kPsJob, "--output", out.string(), "--set", "threads.intra=1", "--set",
          "training.train_metrics=false", "--set", "data.train_subset=24000", "--set", "data.test_subset=2000",
          "--set", "training.epochs=8", "--set", "cluster.ps=2", "--set", "cluster.workers=3", "--set",
          "training.eval_every=20", "--set", "training.checkpoint_every=20"};
}

// The chief's final test accuracy, from its "done:" line.
inline double final_accuracy(const std::string& output) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(output, m, std::regex("done: test accuracy ([0-9.]+)"))) << output;
  return m.empty() ? 0 : std::stod(m[1]);
}

}  // namespace trib::testing
