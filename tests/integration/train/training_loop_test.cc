// The one training loop through its public interface: a batch source of our own (as a
// Python iterator would be), hooks that record when they are called, and the file job's
// dataset source (data.shuffle: false keeps the dataset's order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "train/training_state.h"
#include "trib/data/in_memory_dataset.h"
#include "trib/train/dataset_batch_source.h"
#include "train/training_loop.h"

namespace trib::train {
namespace {

namespace fs = std::filesystem;

const char* kJob = R"(
model:
  input: [4]
  classes: 2
  layers: [{type: dense, units: 2}]
data:
  format: csv
  train: {path: unused.csv}
  test: {path: unused.csv}
optimizer: {name: sgd, lr: 0.1}
schedule: {name: cosine}
training: {batch: 8, steps: 0, epochs: 1, seed: 3}
threads: {intra: 1}
)";

config::JobConfig job(const std::vector<std::string>& overrides = {}) {
  return config::parse_job_config(kJob, "loop.yaml", overrides);
}

data::Batch batch_of(std::int64_t first, std::int64_t rows, float poison = 0) {
  std::vector<float> f;
  std::vector<std::int32_t> l;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 4; ++c) f.push_back(static_cast<float>((first + r) % 7) / 7.0f + poison);
    l.push_back(static_cast<std::int32_t>((first + r) % 2));
  }
  return data::Batch(Tensor::from_vector(Shape{rows, 4}, f), Tensor::from_vector(Shape{rows}, l));
}

// A finite iterator of batches, as a Python generator would feed them: no epochs, no way to
// replay, so it ends the run when it runs out.
class ListSource final : public BatchSource {
 public:
  explicit ListSource(std::vector<data::Batch> batches) : batches_(std::move(batches)) {}
  void start(const SourceStart& s) override { starts.push_back(s); }
  std::optional<data::Batch> next() override {
    if (next_ == batches_.size()) return std::nullopt;
    return batches_[next_++];
  }
  void applied(const data::Batch&) override { ++applied_count; }
  void skipped(const data::Batch&) override { ++skipped_count; }
  std::optional<data::DataPosition> position() const override {
    data::DataPosition p;
    p.set_int("list.applied", applied_count);
    return p;
  }
  std::vector<SourceStart> starts;
  int applied_count = 0, skipped_count = 0;

 private:
  std::vector<data::Batch> batches_;
  std::size_t next_ = 0;
};

// Records every call, in order.
class RecordingHooks final : public TrainingHooks {
 public:
  void on_start(LoopContext& ctx) override { log << "start@" << ctx.step << " "; }
  void on_step(LoopContext& ctx, const data::Batch& b, const StepResult& r) override {
    log << "step" << ctx.step << " ";
    EXPECT_EQ(r.logits.shape()[0], b.rows());
  }
  void on_skip(LoopContext& ctx, const data::Batch& b) override { log << "skip@" << ctx.step << ":" << b.rows() << " "; }
  void on_report(LoopContext& ctx) override { log << "report" << ctx.step << " "; }
  void on_checkpoint(LoopContext& ctx, bool final) override {
    log << (final ? "final" : "ckpt") << ctx.step << " ";
    if (ctx.chief()) ctx.write_checkpoint({{"hook", nlohmann::json{{"step", ctx.step}}}});
  }
  void on_end(LoopContext& ctx) override { log << "end@" << ctx.step; }
  std::ostringstream log;
};

fs::path temp(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("trib_loop_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(TrainingLoop, RunsUntilTheSourceEndsAndCallsEveryHookInOrder) {
  std::vector<data::Batch> batches;
  for (int i = 0; i < 5; ++i) batches.push_back(batch_of(8 * i, 8));
  ListSource source(batches);
  RecordingHooks hooks;
  fs::path out = temp("order");
  std::FILE* quiet = std::fopen("/dev/null", "w");
  TrainerOptions o{job({"schedule.name=constant"}), out, false, false, quiet, {}, {}};
  std::vector<std::int64_t> steps;
  o.on_step = [&](std::int64_t s, double) { steps.push_back(s); };
  RunSummary s = run_training_loop(o, {.total_steps = 0, .report_every = 2, .checkpoint_every = 3}, source, hooks);
  EXPECT_EQ(s.steps, 5);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(source.applied_count, 5);
  EXPECT_EQ(hooks.log.str(),
            "start@0 step1 step2 report2 step3 ckpt3 step4 report4 step5 report5 final5 end@5");
  ASSERT_EQ(source.starts.size(), 1u);
  EXPECT_FALSE(source.starts[0].resume);
  // The last checkpoint holds the source's position after the applied batches and the hook's section.
  Checkpoint c = load_latest_valid(out / "checkpoints")->checkpoint;
  EXPECT_EQ(c.step(), 5);
  EXPECT_EQ(data_position_from_json(c.manifest().data_position).get_int("list.applied"), 5);
  EXPECT_EQ(c.manifest().sections.at("hook")["step"], 5);
  std::fclose(quiet);
  fs::remove_all(out);
}

TEST(TrainingLoop, AStepWithANonFiniteGradientIsSkippedNotApplied) {
  std::vector<data::Batch> batches = {batch_of(0, 8), batch_of(8, 8, std::numeric_limits<float>::quiet_NaN()),
                                      batch_of(16, 8)};
  ListSource source(batches);
  RecordingHooks hooks;
  fs::path out = temp("skip");
  std::FILE* quiet = std::fopen("/dev/null", "w");
  TrainerOptions o{job({"schedule.name=constant"}), out, false, false, quiet, {}, {}};
  RunSummary s = run_training_loop(o, {.total_steps = 0, .report_every = 100, .checkpoint_every = 100}, source, hooks);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(source.applied_count, 2);
  EXPECT_EQ(source.skipped_count, 1);
  // The hooks hear of the skipped batch (a stream counts its events skipped).
  EXPECT_EQ(hooks.log.str(), "start@0 step1 skip@1:8 step2 report2 final2 end@2");
  std::fclose(quiet);
  fs::remove_all(out);
}

TEST(TrainingLoop, AShortLastBatchIsTrainedToo) {
  ListSource source({batch_of(0, 8), batch_of(8, 8), batch_of(16, 3)});
  RecordingHooks hooks;
  fs::path out = temp("short");
  std::FILE* quiet = std::fopen("/dev/null", "w");
  TrainerOptions o{job({"schedule.name=constant"}), out, false, false, quiet, {}, {}};
  run_training_loop(o, {.total_steps = 0, .report_every = 100, .checkpoint_every = 100}, source, hooks);
  EXPECT_EQ(source.applied_count, 3);
  EXPECT_EQ(hooks.log.str(), "start@0 step1 step2 step3 report3 final3 end@3");
  std::fclose(quiet);
  fs::remove_all(out);
}

TEST(TrainingLoop, ResumingAFinishedRunTrainsNothingAndKeepsItsCheckpoint) {
  fs::path out = temp("finished");
  std::FILE* quiet = std::fopen("/dev/null", "w");
  TrainerOptions o{job({"schedule.name=constant"}), out, false, false, quiet, {}, {}};
  const LoopPlan plan{.total_steps = 3, .report_every = 2, .checkpoint_every = 2};
  ListSource first({batch_of(0, 8), batch_of(8, 8), batch_of(16, 8)});
  TrainingHooks plain;
  run_training_loop(o, plan, first, plain);
  o.resume = true;
  ListSource again({batch_of(0, 8)});
  RecordingHooks hooks;
  RunSummary s = run_training_loop(o, plan, again, hooks);
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(again.applied_count, 0);
  ASSERT_EQ(again.starts.size(), 1u);
  EXPECT_TRUE(again.starts[0].resume);
  ASSERT_NE(again.starts[0].checkpoint, nullptr);
  EXPECT_EQ(again.starts[0].checkpoint->step(), 3);
  EXPECT_EQ(hooks.log.str(), "start@3 report3 final3 end@3");
  EXPECT_EQ(load_latest_valid(out / "checkpoints")->checkpoint.step(), 3);
  std::fclose(quiet);
  fs::remove_all(out);
}

TEST(TrainingLoop, TheRunDirectoryConfigIsTheJobAsItRan) {
  // Cosine without total_steps takes the run's length: config.yaml must say so.
  std::vector<data::Batch> batches(6, batch_of(0, 8));
  ListSource source(batches);
  TrainingHooks plain;
  fs::path out = temp("config");
  std::FILE* quiet = std::fopen("/dev/null", "w");
  TrainerOptions o{job({"schedule.warmup_steps=2"}), out, false, false, quiet, {}, {}};
  run_training_loop(o, {.total_steps = 6, .report_every = 3, .checkpoint_every = 3}, source, plain);
  std::ifstream in(out / "config.yaml");
  std::stringstream text;
  text << in.rdbuf();
  config::JobConfig ran = config::parse_job_config(text.str(), "config.yaml");
  EXPECT_EQ(ran.schedule.total_steps, 4) << text.str();
  EXPECT_EQ(ran.schedule.warmup_steps, 2);
  std::fclose(quiet);
  fs::remove_all(out);
}

// A dataset whose every feature is its example's index.
std::shared_ptr<const data::Dataset> indexed(std::int64_t n) {
  std::vector<float> f;
  std::vector<std::int32_t> l;
  for (std::int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < 4; ++c) f.push_back(static_cast<float>(i));
    l.push_back(static_cast<std::int32_t>(i % 2));
  }
  return std::make_shared<data::InMemoryDataset>(data::InMemoryDataset::from_floats(Shape{4}, f, l));
}

std::vector<std::int64_t> first_column(const data::Batch& b) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; r < b.rows(); ++r) out.push_back(static_cast<std::int64_t>(b.features().data<float>()[r * 4]));
  return out;
}

// Regression: the trainer passed seed 0 for data.shuffle: false and the pipeline shuffled
// anyway. Without shuffle, batch k is examples [k*b, (k+1)*b), epoch after epoch.
TEST(DatasetBatchSource, WithoutShuffleBatchKHoldsExamplesKbToKPlusOneB) {
  Distribution one;
  const std::int64_t n = 100, b = 8;
  DatasetBatchSource source(indexed(n), job({"data.shuffle=false", "training.batch=8"}), one);
  source.start({});
  ASSERT_EQ(source.steps_per_epoch(), 12);
  for (int epoch = 0; epoch < 2; ++epoch)
    for (std::int64_t k = 0; k < 12; ++k) {
      std::optional<data::Batch> batch = source.next();
      ASSERT_TRUE(batch);
      std::vector<std::int64_t> expected;
      for (std::int64_t i = k * b; i < (k + 1) * b; ++i) expected.push_back(i);
      EXPECT_EQ(first_column(*batch), expected) << "epoch " << epoch << " batch " << k;
    }
}

TEST(DatasetBatchSource, WithShuffleTheOrderIsAPermutation) {
  Distribution one;
  DatasetBatchSource source(indexed(64), job({"data.shuffle=true", "training.batch=64"}), one);
  source.start({});
  std::vector<std::int64_t> got = first_column(*source.next());
  std::vector<std::int64_t> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(got, sorted) << "shuffle on: not the dataset's order";
  for (std::int64_t i = 0; i < 64; ++i) EXPECT_EQ(sorted[i], i);
}

}  // namespace
}  // namespace trib::train
