// A local cluster (`trib train` with a cluster section) that fails (issue 11): the error is
// printed once, naming the process, without the others' teardown; what can be checked is
// checked before any process starts; and a failed run leaves nothing that refuses its rerun
// with the same --output (a run directory with a checkpoint is kept, and --resume named).
#include <signal.h>

#include <fmt/format.h>

#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Runs the job and kills worker0, the chief, with SIGKILL once `ready` holds (checked on every line and tick).
// The chief, because its loss ends a ps job when it is not relaunched (cluster.max_restarts=0; a
// relaunched chief is tests/faults/ps/chief_relaunch_test.cc); a lost non-chief worker is evicted
// and the job goes on (tests/e2e/ps/stalled_worker_test.cc).
TribRun run_and_kill_chief(const std::vector<std::string>& args, const std::function<bool(const std::string&)>& ready,
                             pid_t& killed) {
  pid_t chief = -1;
  killed = -1;
  return run_trib(args, 120s, [&](const std::string& line, Trib&) {
    if (chief < 0) {
      std::smatch m;
      if (std::regex_search(line, m, std::regex("worker0 \\(pid ([0-9]+)\\)"))) chief = std::stoi(m[1].str());
    }
    if (chief > 0 && killed < 0 && ready(line)) {
      ::kill(chief, SIGKILL);
      killed = chief;
    }
  });
}

TEST(LocalClusterFailure, AKilledWorkerIsReportedOnceAndItsRunCanBeRerun) {
  TempDir dir("killed");
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 2}\n"));
  std::string out = (dir.path() / "run").string();
  pid_t killed = -1;
  // Long enough to be killed mid-run, and no checkpoint before the end.
  TribRun r = run_and_kill_chief({"train", job, "--output", out, "--set", "training.steps=1000000", "--set",
                                    "training.eval_every=1000000", "--set", "training.checkpoint_every=1000000",
                                    "--set", "cluster.max_restarts=0"},
                                   [](const std::string& line) { return line.find("[worker0] run directory:") == 0; },
                                   killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(fmt::format("trib: error: worker0 (pid {}) was killed by signal 9", killed)),
            std::string::npos)
      << r.output;
  EXPECT_EQ(count(r.output, "trib: error:"), 1u) << r.output;
  // The others' teardown is not the user's business.
  EXPECT_EQ(r.output.find("Connection reset"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("closed the connection"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[trib.net]"), std::string::npos) << r.output;
  // It left config.yaml and metrics.jsonl, no checkpoint: the directory goes, and says so.
  EXPECT_FALSE(fs::exists(out)) << r.output;
  EXPECT_NE(r.output.find("removed the run directory " + out), std::string::npos) << r.output;

  TribRun again = run_trib({"train", job, "--output", out}, 120s);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(fs::exists(fs::path(out) / "config.yaml")) << again.output;
}

TEST(LocalClusterFailure, ARunWithACheckpointIsKeptAndResumeIsNamed) {
  TempDir dir("checkpointed");
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 2}\n"));
  std::string out = (dir.path() / "run").string();
  pid_t killed = -1;
  TribRun r = run_and_kill_chief({"train", job, "--output", out, "--set", "training.steps=1000000", "--set",
                                    "training.eval_every=1000000", "--set", "training.checkpoint_every=10", "--set",
                                    "cluster.max_restarts=0"},
                                   [&](const std::string&) { return newest_checkpoint(out) >= 0; }, killed);
  ASSERT_GT(killed, 0) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(count(r.output, "trib: error:"), 1u) << r.output;
  EXPECT_GE(newest_checkpoint(out), 0) << r.output;
  EXPECT_NE(r.output.find("holds a checkpoint: continue the run with `trib train " + job + " --resume " + out + "`"),
            std::string::npos)
      << r.output;
}

TEST(LocalClusterFailure, ABatchLargerThanAShardIsRefusedBeforeAnyProcessStarts) {
  TempDir dir("batch");
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 2}\n"));
  std::string out = (dir.path() / "run").string();
  TribRun r = run_trib({"train", job, "--output", out, "--set", "training.batch=100000"}, 60s);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output,
            "trib: error: training.batch 100000 is larger than a worker's share of the training set (1000 examples of "
            "2000, over 2 workers)\n");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace trib::testing
