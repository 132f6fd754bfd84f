// A run killed after a checkpoint and resumed computes the same losses, step for step, as
// one that was never interrupted: variables, optimizer slots, data order and dropout masks
// all continue exactly.
#include <gtest/gtest.h>

#include <filesystem>

#include "trib/config/job_config.h"
#include "trib/train/trainer.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

config::JobConfig small_job() {
  return config::load_job_config(
      std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml",
      {"data.train_subset=1024", "data.test_subset=256", "training.steps=48", "training.batch=64",
       "training.eval_every=16", "training.checkpoint_every=16", "training.train_metrics=false",
       "threads.intra=1", "optimizer.name=adam", "schedule.name=cosine",
       // A dropout layer: its masks must continue exactly too.
       "model.layers.2={type: dropout, rate: 0.2}"});
}

struct Crash : std::exception {};

TEST(Resume, LossesMatchAnUninterruptedRunStepForStep) {
  fs::path base = fs::temp_directory_path() / ("trib_resume_" + std::to_string(::getpid()));
  fs::remove_all(base);
  std::FILE* quiet = std::fopen("/dev/null", "w");

  std::map<std::int64_t, double> uninterrupted;
  train::TrainerOptions a{small_job(), base / "a", false, false, quiet, {}, {}};
  a.on_step = [&](std::int64_t s, double loss) { uninterrupted[s] = loss; };
  train::train(a);
  ASSERT_EQ(uninterrupted.size(), 48u);

  // Dies after step 20: the newest checkpoint is the one at step 16.
  std::map<std::int64_t, double> resumed;
  train::TrainerOptions b{small_job(), base / "b", false, false, quiet, {}, {}};
  bool crashed = false;
  b.on_step = [&](std::int64_t s, double loss) {
    resumed[s] = loss;
    if (s == 20 && !crashed) {
      crashed = true;
      throw Crash();
    }
  };
  EXPECT_THROW(train::train(b), Crash);
  b.resume = true;
  train::train(b);

  for (std::int64_t s = 1; s <= 48; ++s) {
    ASSERT_TRUE(resumed.count(s)) << "step " << s;
    EXPECT_EQ(resumed[s], uninterrupted[s]) << "step " << s;
  }
  std::fclose(quiet);
  fs::remove_all(base);
}

}  // namespace
}  // namespace trib
