// Trials forked from the sweep (sweep/trial_fork.h) against trials as `trib train`
// processes: the same sweep gives the same results at the same steps, and a forked trial
// promoted at a rung goes on in its own process, where a `trib train` trial is started again
// with --resume.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "e2e/sweep/tiny_job.h"
#include "e2e/trib_process.h"
#include "trib/sweep/sweep.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every result line of sweep.jsonl: trial, step, metric, decision.
std::vector<std::string> results(const fs::path& dir) {
  std::vector<std::string> out;
  std::ifstream in(dir / "sweep.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["event"] == "result")
      out.push_back(j["trial"].dump() + " " + j["step"].dump() + " " + j["metric"].dump() + " " + j["decision"].dump());
  }
  return out;
}

TEST(SweepFork, ForkedTrialsGiveWhatTribTrainTrialsGiveAndGoOnInTheirProcess) {
  testing::TempDir dir("sweep_fork");
  dir.file("job.yaml", testing::tiny_job_yaml(100));
  // One slot: the order of results, and so ASHA's decisions, do not depend on timing.
  const std::string file = dir.file(
      "sweep.yaml", "job: job.yaml\nsearch: asha\nsteps: 36\nslots: 1\nthreads: 1\n"
                    "asha: {grace_period: 4, reduction_factor: 3}\n"
                    "space:\n  optimizer.lr: [0.01, 0.003, 0.00003, 0.00001]\n");
  std::map<bool, sweep::SweepResult> r;
  for (bool fork : {true, false}) {
    sweep::SweepOptions o;
    o.config = sweep::load_sweep_config(file);
    o.output = (dir.path() / (fork ? "fork" : "exec")).string();
    o.executable = TRIB_BINARY;
    o.out = stderr;
    o.fork_trials = fork;
    r[fork] = sweep::run_sweep(o);
  }
  std::vector<std::string> forked = results(dir.path() / "fork"), exec = results(dir.path() / "exec");
  ASSERT_GE(forked.size(), 4u);  // a result for every trial at the first rung at least
  EXPECT_EQ(forked, exec);
  EXPECT_EQ(r[true].best_trial, r[false].best_trial);
  EXPECT_EQ(r[true].best_metric, r[false].best_metric);
  EXPECT_EQ(r[true].stopped, r[false].stopped);
  EXPECT_GE(r[true].stopped, 1);
  EXPECT_GT(r[true].cpu_s, 0);

  // Trial 0 is first at every rung, so it is promoted at each: forked, one process went on;
  // as `trib train`, one process per segment.
  const std::string fork_log = read(dir.path() / "fork" / "logs" / "trial-0000.log");
  EXPECT_NE(fork_log.find("(forked from the sweep"), std::string::npos) << fork_log;
  EXPECT_NE(fork_log.find("(the same process goes on to training.steps=12)"), std::string::npos) << fork_log;
  EXPECT_NE(fork_log.find("(the same process goes on to training.steps=36)"), std::string::npos) << fork_log;
  // It went on inside the same training run: the checkpoint written at each rung (kept for
  // --resume) was not read back; its config.yaml says its full length, as the resumed one's.
  EXPECT_NE(fork_log.find("continuing in this process to step 12"), std::string::npos) << fork_log;
  EXPECT_NE(fork_log.find("continuing in this process to step 36"), std::string::npos) << fork_log;
  EXPECT_EQ(fork_log.find("resumed from"), std::string::npos) << fork_log;
  EXPECT_EQ(read(dir.path() / "fork" / "trials" / "trial-0000" / "config.yaml"),
            read(dir.path() / "exec" / "trials" / "trial-0000" / "config.yaml"));
  EXPECT_EQ(testing::newest_checkpoint(dir.path() / "fork" / "trials" / "trial-0000"), 36);
  const std::string exec_log = read(dir.path() / "exec" / "logs" / "trial-0000.log");
  EXPECT_EQ(exec_log.find("forked"), std::string::npos) << exec_log;
  EXPECT_NE(exec_log.find("--resume"), std::string::npos) << exec_log;
}

}  // namespace
}  // namespace trib
