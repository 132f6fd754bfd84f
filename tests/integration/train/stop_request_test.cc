// SIGTERM to a single-process run (SignalStop): it stops at the next step boundary with a
// checkpoint there, and a resumed run computes the same losses, step for step, as a run that
// was never stopped. A real signal, sent to this process.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "trib/checkpoint/checkpoint.h"
#include "trib/config/job_config.h"
#include "trib/core/termination_signal.h"
#include "trib/train/stop_request.h"
#include "trib/train/trainer.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

config::JobConfig small_job() {
  return config::load_job_config(
      std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml",
      {"data.train_subset=1024", "data.test_subset=256", "training.steps=48", "training.batch=64",
       "training.eval_every=16", "training.checkpoint_every=16", "training.train_metrics=false",
       "threads.intra=1", "model.layers.2={type: dropout, rate: 0.2}"});
}

TEST(StopRequest, SigtermStopsAtTheNextStepWithACheckpointAndResumeMatchesStepForStep) {
  fs::path base = fs::temp_directory_path() / ("trib_stop_" + std::to_string(::getpid()));
  fs::remove_all(base);
  std::FILE* quiet = std::fopen("/dev/null", "w");

  std::map<std::int64_t, double> uninterrupted;
  train::TrainerOptions a{small_job(), base / "a", false, false, quiet, {}, {}};
  a.on_step = [&](std::int64_t s, double loss) { uninterrupted[s] = loss; };
  train::train(a);

  std::map<std::int64_t, double> resumed;
  {
    TerminationSignal terminate;
    train::SignalStop stop(terminate);
    train::TrainerOptions b{small_job(), base / "b", false, false, quiet, {}, {}};
    b.stop = &stop;
    b.on_step = [&](std::int64_t s, double loss) {
      resumed[s] = loss;
      if (s == 21) {
        ::kill(::getpid(), SIGTERM);  // mid-step, as preemption comes
        // Its watcher thread takes it: received before this step's boundary.
        while (!terminate.received()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    };
    train::RunSummary r = train::train(b);
    EXPECT_EQ(r.steps, 21);
  }
  ASSERT_EQ(resumed.size(), 21u);
  EXPECT_EQ(list_checkpoints(base / "b" / "checkpoints").back().step, 21);

  train::TrainerOptions c{small_job(), base / "b", true, false, quiet, {}, {}};
  c.on_step = [&](std::int64_t s, double loss) { resumed[s] = loss; };
  train::train(c);
  ASSERT_EQ(resumed.size(), 48u);
  for (std::int64_t s = 1; s <= 48; ++s) EXPECT_EQ(resumed[s], uninterrupted[s]) << "step " << s;
  std::fclose(quiet);
  fs::remove_all(base);
}

}  // namespace
}  // namespace trib
