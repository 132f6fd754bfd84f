// The job the strategy.ps_replicas fault tests run as real processes, and what they read from
// its output: 2 servers with a backup each, 2 async workers, `epochs` epochs (4 by default) of
// a 16,000-example subset (62 steps an epoch per worker, each pushed once to each shard). The
// chief prints a progress line every 50 steps.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "e2e/run_output.h"
#include "e2e/trib_process.h"

namespace trib::testing::replica_job {

// Both workers' pushes to one shard over `epochs` epochs.
inline constexpr long pushes_per_shard(int epochs) { return 2L * 62 * epochs; }

inline std::vector<std::string> job(const std::filesystem::path& out, int epochs = 4) {
  static const std::string ps = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";
  return {"train", ps, "--output", out.string(), "--set", "threads.intra=1", "--set",
          "training.train_metrics=false", "--set", "data.train_subset=16000", "--set", "data.test_subset=10000",
          "--set", "training.epochs=" + std::to_string(epochs), "--set", "cluster.ps=2", "--set", "cluster.workers=2", "--set",
          "strategy.ps_replicas=1", "--set", "training.eval_every=50", "--set", "training.checkpoint_every=50"};
}
// The final accuracy of `job` (4 epochs) run without a fault: what a faulted run must come
// within a point of. Run once per test process.
inline double fault_free_accuracy() {
  static const double accuracy = [] {
    const std::filesystem::path out = fresh_path("faults", "ps_replica_job_clean");
    const TribRun clean = run_trib(job(out), std::chrono::seconds(240));
    EXPECT_EQ(clean.exit_code, 0) << clean.output;
    std::filesystem::remove_all(out);
    return final_accuracy(clean.output);
  }();
  return accuracy;
}

// Updates applied on shard p (by whichever server serves it at the end), from the chief's report.
inline long updates(const std::string& output, int p) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(output, m, std::regex(fmt::format("ps {}: [0-9.]+ MB in, [0-9.]+ MB out, [0-9]+ "
                                                                  "requests, ([0-9]+) updates", p))))
      << output;
  return m.empty() ? -1 : std::stol(m[1]);
}

}  // namespace trib::testing::replica_job
