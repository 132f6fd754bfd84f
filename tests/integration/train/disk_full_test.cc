// A disk that fills up while checkpointing (a real one: a small tmpfs mounted for the test,
// as root) costs the checkpoints it cannot hold, not the run: the run goes on, says so in one
// line per failed checkpoint, and the previous checkpoint stays complete and is what a
// resumed run continues from, step for step.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "trib/checkpoint/checkpoint.h"
#include "trib/config/job_config.h"
#include "trib/train/trainer.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

config::JobConfig small_job() {
  return config::load_job_config(
      std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml",
      {"data.train_subset=1024", "data.test_subset=256", "training.steps=48", "training.batch=64",
       "training.eval_every=48", "training.checkpoint_every=16", "training.keep_checkpoints=10",
       "training.train_metrics=false", "threads.intra=1"});
}

// Fills the file system holding `dir` with one file, then frees `leave` bytes of it: room
// for log lines, none for a checkpoint.
void fill(const fs::path& file, std::size_t leave) {
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::string block(1 << 16, 'x');
  while (std::fwrite(block.data(), 1, block.size(), f) == block.size()) {
  }
  std::fclose(f);
  fs::resize_file(file, fs::file_size(file) > leave ? fs::file_size(file) - leave : 0);
}

class DiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = fs::temp_directory_path() / ("trib_disk_full_" + std::to_string(::getpid()));
    fs::create_directories(mount_);
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=16m") != 0) {
      std::string why = std::strerror(errno);
      fs::remove(mount_);
      GTEST_SKIP() << "cannot mount a tmpfs (" << why << "; the test needs root)";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount(mount_.c_str());
    std::error_code ec;
    fs::remove_all(mount_, ec);
  }

  fs::path mount_;
  bool mounted_ = false;
};

TEST_F(DiskFull, TheRunGoesOnAndTheNextResumeUsesThePreviousCheckpoint) {
  std::FILE* log = std::tmpfile();
  std::map<std::int64_t, double> uninterrupted;
  train::TrainerOptions a{small_job(), mount_ / "a", false, false, log, {}, {}};
  a.on_step = [&](std::int64_t s, double loss) { uninterrupted[s] = loss; };
  train::train(a);
  fs::remove_all(mount_ / "a");

  // The disk fills after the step-16 checkpoint: those at 32 and 48 (the last) fail.
  std::map<std::int64_t, double> resumed;
  train::TrainerOptions b{small_job(), mount_ / "b", false, false, log, {}, {}};
  b.on_step = [&](std::int64_t s, double loss) {
    resumed[s] = loss;
    if (s == 17) fill(mount_ / "filler", 64 << 10);
  };
  ASSERT_NO_THROW(train::train(b));
  ASSERT_EQ(resumed.size(), 48u);
  std::vector<CheckpointRef> kept = list_checkpoints(mount_ / "b" / "checkpoints");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].step, 16);
  EXPECT_FALSE(fs::exists(mount_ / "b" / "checkpoints" / "ckpt-32")) << "a failed checkpoint leaves nothing behind";
  std::rewind(log);
  std::string text(1 << 20, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), log));
  for (int step : {32, 48}) {
    const std::string line = "step " + std::to_string(step) + ": checkpoint not written (";
    EXPECT_NE(text.find(line), std::string::npos) << "expected '" << line << "' in:\n" << text;
  }
  EXPECT_NE(text.find("No space left on device"), std::string::npos) << text;

  // Space again: the resumed run continues from step 16, as if never interrupted.
  fs::remove(mount_ / "filler");
  resumed.clear();
  b.on_step = [&](std::int64_t s, double loss) { resumed[s] = loss; };
  b.resume = true;
  train::train(b);
  EXPECT_EQ(resumed.begin()->first, 17);
  for (std::int64_t s = 17; s <= 48; ++s) EXPECT_EQ(resumed[s], uninterrupted[s]) << "step " << s;
  EXPECT_EQ(list_checkpoints(mount_ / "b" / "checkpoints").back().step, 48);
  std::fclose(log);
}

}  // namespace
}  // namespace trib
