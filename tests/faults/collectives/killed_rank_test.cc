// RELIABILITY.md row 2 for allreduce with real processes: `kill -9` worker 2 of a local
// allreduce cluster of 3 mid-run. The launcher evicts it, the two survivors re-form their
// group in a new generation, roll back to the step both can stand at, and finish the run at
// the learning rate rescaled by the linear rule, with a sensible accuracy. No process
// restarts (cluster.max_restarts=0). With restarts (the default), the launcher relaunches it
// and it joins the running group: at its first step its variables equal the others'.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <sstream>
#include <vector>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::TribRun;

const std::string kAllreduce = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_allreduce.yaml";

// Long enough (1000 steps) for a relaunched process to start, read its data and join while the
// others still train, on a loaded machine.
std::vector<std::string> job(const fs::path& out, int max_restarts) {
  return {"train", kAllreduce, "--output", out.string(), "--set", "cluster.workers=3", "--set", "threads.intra=1",
          "--set", "training.train_metrics=false", "--set", "data.train_subset=48000", "--set", "data.test_subset=2000",
          "--set", "training.epochs=4", "--set", "training.batch=64", "--set",
          fmt::format("cluster.max_restarts={}", max_restarts)};
}

// Runs the job, killing worker 2 with SIGKILL at its first progress line (after its step 1).
TribRun run_killing_worker2(const std::vector<std::string>& args, bool& killed, std::string& pid) {
  return run_trib(args, std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("worker2 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (!killed && !pid.empty() && line.starts_with("[worker2] step 1/")) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = true;
    }
  });
}

// The captures of the first line of `output` matching `pattern` (the whole match first);
// empty if none does. Line by line: std::regex on a whole transcript recurses too deep.
std::vector<std::string> find_line(const std::string& output, const std::regex& pattern) {
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

double final_accuracy(const std::string& output) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(output, m, std::regex("done: test accuracy ([0-9.]+)"))) << output;
  return m.empty() ? 0 : std::stod(m[1]);
}

TEST(AllreduceKilledWorker, TheSurvivorsReformTheGroupAndFinish) {
  const fs::path out = testing::fresh_path("allreduce_faults", "killed");
  bool killed = false;
  std::string pid;
  TribRun r = run_killing_worker2(job(out, 0), killed, pid);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2 (pid " + pid + ") was killed by signal 9"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("it was evicted, and the job goes on without it"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("relaunching"), std::string::npos) << "no process restarts";
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::string prefix = fmt::format(R"(\[worker{}\])", w);
    const std::regex went_on(prefix + R"(.*the group went on as generation ([0-9]+) with 2 workers \(was 3; this one rank )" +
                             std::to_string(w) + R"(\); back to step ([0-9]+) .*learning rate x0\.6667 \(linear scaling\))");
    EXPECT_FALSE(find_line(r.output, went_on).empty()) << r.output;
    EXPECT_FALSE(find_line(r.output, std::regex(prefix + R"(.*from epoch [0-9]+ on, data shard )" +
                                                std::to_string(w) + " of 2"))
                     .empty())
        << "the survivors reshard from the next epoch: " << r.output;
  }
  EXPECT_GE(final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

// Part two: the launcher relaunches worker 2 (cluster.max_restarts), it joins the running
// group in a new generation, takes the variables and optimizer state from a member, and the
// group is back to 3 workers at the original learning rate. Every member logs a checksum of
// its variables as the generation starts: the joiner's equals the others'.
TEST(AllreduceKilledWorker, ARelaunchedWorkerRejoinsWithTheGroupsVariables) {
  const fs::path out = testing::fresh_path("allreduce_faults", "rejoin");
  bool killed = false;
  std::string pid;
  TribRun r = run_killing_worker2(job(out, 3), killed, pid);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2 (pid " + pid + ") was killed by signal 9 (Killed); relaunching (1 of 3)"),
            std::string::npos)
      << r.output;
  const std::vector<std::string> joined = find_line(
      r.output,
      std::regex(R"(\[worker2\] joined the allreduce group as generation ([0-9]+): rank 2 of 3; starts at step ([0-9]+) )"
                 R"(with rank [01]'s variables \(crc32c ([0-9a-f]{8})\) and optimizer state; learning rate x1 )"));
  ASSERT_FALSE(joined.empty()) << r.output;
  const std::string generation = joined[1], crc = joined[3];
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::regex same(fmt::format(R"(\[worker{}\] step [0-9]+: .*the group went on as generation {} with 3 )"
                                      R"(workers \(was 2; this one rank {}\); back to step {} .*variables crc32c ([0-9a-f]{{8}}), )"
                                      R"(learning rate x1 )",
                                      w, generation, w, joined[2]));
    const std::vector<std::string> m = find_line(r.output, same);
    ASSERT_FALSE(m.empty()) << r.output;
    EXPECT_EQ(m[1], crc) << "the joiner starts with the members' variables";
  }
  EXPECT_GE(final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
