// A single-process run stopped by Ctrl-C (issue 11) leaves nothing that refuses its rerun
// with the same --output: its directory, without a checkpoint, is removed; with one, kept.
// SIGTERM is preemption: it stops with a checkpoint.
#include <signal.h>

#include <functional>

#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

const char* kJob = R"(name: tiny
model:
  input: [1, 28, 28]
  classes: 10
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 10}
data:
  format: idx
  train:
    images: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz
  test:
    images: /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
  train_subset: 2000
  test_subset: 500
optimizer: {name: adam, lr: 0.002}
training: {steps: 40, batch: 32, train_metrics: false}
threads: {intra: 1, inter: 1}
)";

// An endless run of kJob into `out`, sent `signal` once `ready` says so (given each output
// line and the run directory); `sent` tells whether it was.
TribRun interrupt_run(const std::string& job, const std::string& out, int checkpoint_every, int signal,
                      const std::function<bool(const std::string& line)>& ready, bool& sent) {
  sent = false;
  return run_trib({"train", job, "--output", out, "--set", "training.steps=100000000", "--set",
                   "training.eval_every=100000000", "--set", "training.checkpoint_every=" + std::to_string(checkpoint_every)},
                  120s, [&](const std::string& line, Trib& p) {
                    if (!sent && ready(line)) {
                      p.signal(signal);
                      sent = true;
                    }
                  });
}

bool run_started(const std::string& line) { return line.starts_with("run directory:"); }

TEST(InterruptedRun, CtrlCWithoutACheckpointRemovesTheRunDirectory) {
  TempDir dir("interrupted");
  std::string job = dir.file("job.yaml", kJob);
  std::string out = (dir.path() / "run").string();
  bool sent = false;
  TribRun r = interrupt_run(job, out, 100000000, SIGINT, run_started, sent);
  ASSERT_TRUE(sent) << r.output;
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_FALSE(fs::exists(out)) << r.output;
  EXPECT_NE(r.output.find("removed the run directory " + out), std::string::npos) << r.output;
  TribRun again = run_trib({"train", job, "--output", out}, 120s);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

// Ctrl-C after a checkpoint: the directory stays, and the message says how to go on.
TEST(InterruptedRun, CtrlCWithACheckpointKeepsItAndNamesResume) {
  TempDir dir("interrupted_ckpt");
  std::string job = dir.file("job.yaml", kJob);
  std::string out = (dir.path() / "run").string();
  bool sent = false;
  TribRun r = interrupt_run(job, out, 10, SIGINT, [&](const std::string&) { return newest_checkpoint(out) >= 0; }, sent);
  ASSERT_TRUE(sent) << r.output;
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_GE(newest_checkpoint(out), 0);
  EXPECT_NE(r.output.find("--resume " + out + "`"), std::string::npos) << r.output;
}

// SIGTERM is preemption (issue 12): a checkpoint at the next step boundary, exit 0, and the
// same hint to go on.
TEST(InterruptedRun, SigtermStopsWithACheckpointAndNamesResume) {
  TempDir dir("interrupted_term");
  std::string job = dir.file("job.yaml", kJob);
  std::string out = (dir.path() / "run").string();
  bool sent = false;
  // Once step 1 is applied (its progress line), so that the stop's step boundary is past it:
  // sent at "run directory:", SIGTERM could land before the first step and stop at step 0.
  TribRun r = interrupt_run(job, out, 100000000, SIGTERM, [](const std::string& line) { return line.starts_with("step 1/"); },
                            sent);
  ASSERT_TRUE(sent) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(newest_checkpoint(out), 1) << "the stop wrote a checkpoint at the step it stopped at";
  EXPECT_NE(r.output.find("--resume " + out + "`"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trib::testing
