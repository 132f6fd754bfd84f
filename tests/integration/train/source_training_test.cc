// train_on_source: the training loop over a caller's batch source, from the caller's
// variables, handing the trained ones back (what the Python package's Model.fit runs).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "train/training_state.h"
#include "trib/data/in_memory_dataset.h"
#include "trib/train/datasets.h"
#include "trib/train/model_graph.h"
#include "trib/train/source_training.h"

namespace trib::train {
namespace {

namespace fs = std::filesystem;

const char* kJob = R"(
model:
  input: [4]
  classes: 2
  layers: [{type: dense, units: 3, activation: relu}, {type: batch_norm}, {type: dense, units: 2}]
data: {format: python}
optimizer: {name: sgd, lr: 0.1}
training: {batch: 8, epochs: 1, seed: 3}
threads: {intra: 1}
)";

class CountingSource final : public BatchSource {
 public:
  explicit CountingSource(int batches) : left_(batches) {}
  std::optional<data::Batch> next() override {
    if (left_-- <= 0) return std::nullopt;
    std::vector<float> f;
    std::vector<std::int32_t> l;
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c < 4; ++c) f.push_back(static_cast<float>((r + c) % 5) / 5.0f);
      l.push_back(r % 2);
    }
    return data::Batch(Tensor::from_vector(Shape{8, 4}, f), Tensor::from_vector(Shape{8}, l));
  }

 private:
  int left_;
};

struct TempRun {
  fs::path dir = fs::temp_directory_path() / ("trib_source_training_" + std::to_string(::getpid()));
  std::FILE* quiet = std::fopen("/dev/null", "w");
  TempRun() { fs::remove_all(dir); }
  ~TempRun() {
    std::fclose(quiet);
    fs::remove_all(dir);
  }
  TrainerOptions options() const {
    TrainerOptions o;
    o.job = config::parse_job_config(kJob, "source.yaml");
    o.output = dir;
    o.log = quiet;
    return o;
  }
};

// The variables a fresh run of kJob starts from.
VariableStore fresh_variables(const config::JobConfig& job) {
  EngineContext engine(EngineOptions{1, 1});
  ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, job.training.seed};
  VariableStore vars;
  initialize_parameters(ModelGraph(spec, 1, false, engine).parameters(), job.training.seed, vars);
  return vars;
}

TEST(SourceTraining, StartsFromTheCallersVariablesAndHandsTheTrainedOnesBack) {
  TempRun run;
  TrainerOptions o = run.options();
  VariableStore initial = fresh_variables(o.job);
  initial.get("dense_2/b").fill(5.0f);  // not what a fresh run would start from
  const std::vector<float> before = initial.get("dense_2/w").to_vector<float>();
  CountingSource source(6);
  SourceTrainingOptions plan;
  plan.initial = &initial;
  plan.report_every = 4;
  std::vector<StepMetrics> steps;
  std::vector<std::int64_t> reports;
  plan.on_step = [&](const StepMetrics& m) { steps.push_back(m); };
  plan.on_report = [&](std::int64_t step, double, VariableStore& vars) {
    reports.push_back(step);
    EXPECT_TRUE(vars.contains("dense_2/w"));
  };
  SourceTrainingResult r = train_on_source(o, source, plan);
  EXPECT_EQ(r.summary.steps, 6);
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(steps.front().step, 1);
  EXPECT_EQ(steps.back().step, 6);
  EXPECT_EQ(steps.front().rows, 8);
  EXPECT_GE(steps.front().accuracy, 0.0);
  EXPECT_LE(steps.front().accuracy, 1.0);
  EXPECT_EQ(reports, (std::vector<std::int64_t>{4, 6}));
  // Every parameter and running statistic comes back, trained from the given start.
  EXPECT_EQ(r.variables.names(), initial.names());
  EXPECT_NE(r.variables.get("dense_2/w").to_vector<float>(), before);
  EXPECT_GT(r.variables.get("dense_2/b").to_vector<float>()[0], 3.0f) << "trained from 5, not from 0";
  // The run directory is a run's: config.yaml and the last checkpoint.
  EXPECT_TRUE(fs::exists(run.dir / "config.yaml"));
  EXPECT_EQ(load_latest_valid(run.dir / "checkpoints")->checkpoint.step(), 6);
}

TEST(SourceTraining, RefusesStartingVariablesThatDoNotFit) {
  TempRun run;
  TrainerOptions o = run.options();
  VariableStore initial = fresh_variables(o.job);
  initial.set("dense_2/b", Tensor::zeros(DType::f32, Shape{7}));
  CountingSource source(2);
  SourceTrainingOptions plan;
  plan.initial = &initial;
  EXPECT_THROW(train_on_source(o, source, plan), ShapeError);
  VariableStore missing;
  plan.initial = &missing;
  fs::remove_all(run.dir);
  try {
    train_on_source(o, source, plan);
    FAIL() << "missing variables were accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("have no '"), std::string::npos) << e.what();
  }
}

TEST(SourceTraining, APythonJobHasNoFilesToLoad) {
  config::JobConfig job = config::parse_job_config(kJob, "source.yaml");
  try {
    load_datasets(job.data, job.model);
    FAIL() << "a python job's data were loaded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("data.format is python"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trib::train
