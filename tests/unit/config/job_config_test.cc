#include <gtest/gtest.h>

#include "config/config_reader.h"
#include "trib/config/job_config.h"

namespace trib::config {
namespace {

const char* kJob = R"(
name: t
model:
  input: [1, 4, 4]
  classes: 3
  layers:
    - {type: flatten}
    - {type: dense, units: 8, activation: relu}
    - {type: dense, units: 3}
data:
  format: idx
  train: {images: a, labels: b}
  test: {images: c, labels: d}
optimizer: {name: adam, lr: 0.01}
training: {epochs: 2, batch: 16}
)";

std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_job_config(yaml, "job.yaml", overrides);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(JobConfig, ParsesEverySection) {
  JobConfig j = parse_job_config(kJob, "job.yaml");
  EXPECT_EQ(j.name, "t");
  EXPECT_EQ(j.model.input, (std::vector<std::int64_t>{1, 4, 4}));
  ASSERT_EQ(j.model.layers.size(), 3u);
  EXPECT_EQ(j.model.layers[1].dense.units, 8);
  EXPECT_EQ(j.model.layers[1].dense.activation, nn::Activation::relu);
  EXPECT_EQ(j.optimizer.name, "adam");
  EXPECT_FLOAT_EQ(j.schedule.base_lr, 0.01f) << "optimizer.lr is the schedule's base rate";
  EXPECT_EQ(j.training.batch, 16);
  EXPECT_EQ(j.data.num_classes, 3) << "defaults to model.classes";
}

TEST(JobConfig, UnknownKeySuggestsTheNearestOne) {
  std::string yaml = kJob;
  yaml.replace(yaml.find("batch: 16"), 9, "bach: 16");
  std::string e = error_of(yaml);
  EXPECT_NE(e.find("unknown key 'training.bach'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'training.batch'"), std::string::npos) << e;
  EXPECT_NE(e.find("job.yaml"), std::string::npos) << e;
}

TEST(JobConfig, UnknownKeyInsideALayerIsNamedWithItsIndex) {
  std::string yaml = kJob;
  yaml.replace(yaml.find("units: 8"), 8, "unit: 8");
  std::string e = error_of(yaml);
  EXPECT_NE(e.find("model.layers[1]"), std::string::npos) << e;
}

TEST(JobConfig, OverridesApplyBeforeValidation) {
  JobConfig j = parse_job_config(kJob, "job.yaml",
                                 {"training.batch=32", "model.layers.1.units=5", "optimizer.name=sgd"});
  EXPECT_EQ(j.training.batch, 32);
  EXPECT_EQ(j.model.layers[1].dense.units, 5);
  EXPECT_EQ(j.optimizer.name, "sgd");
  EXPECT_NE(j.resolved_yaml.find("batch: 32"), std::string::npos) << j.resolved_yaml;
}

TEST(JobConfig, OverrideCreatesMissingSections) {
  JobConfig j = parse_job_config(kJob, "job.yaml", {"schedule.name=cosine", "threads.intra=1"});
  EXPECT_EQ(j.schedule.name, "cosine");
  EXPECT_EQ(j.threads.intra, 1);
}

TEST(JobConfig, MisspeltOverrideIsRejected) {
  EXPECT_NE(error_of(kJob, {"training.epoch=3"}).find("did you mean 'training.epochs'"), std::string::npos);
  EXPECT_NE(error_of(kJob, {"noequals"}).find("expected key.path=value"), std::string::npos);
}

TEST(JobConfig, WrongTypesNameKeyAndExpectation) {
  EXPECT_NE(error_of(kJob, {"training.batch=abc"}).find("training.batch must be an integer, got 'abc'"),
            std::string::npos);
  EXPECT_NE(error_of(kJob, {"training.batch=0"}).find("must be positive"), std::string::npos);
}

// A worker whose partitions go quiet ends on its own: parameter servers stop waiting for it
// (every mode), an allreduce group cannot.
TEST(JobConfig, AnIdleEndedStreamNeedsParameterServers) {
  const std::string example = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";
  const std::vector<std::string> idle = {"data.kafka.idle_timeout_s=3", "training.steps=0"};
  for (std::string mode : {"async", "sync", "bounded", "averaging"}) {
    std::vector<std::string> o = idle;
    o.push_back("strategy.mode=" + mode);
    EXPECT_NO_THROW(load_job_config(example, o)) << mode;
  }
  std::vector<std::string> o = idle;
  o.push_back("strategy.name=allreduce");
  try {
    load_job_config(example, o);
    ADD_FAILURE() << "allreduce with idle_timeout_s was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("stall the others"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(load_job_config(example, {"strategy.name=allreduce", "training.steps=100"}));
}

// Who assigns Kafka partitions: the job (allreduce and parameter-server jobs) or the group.
TEST(JobConfig, PartitionsAssignedByTheJobOrTheGroup) {
  const std::string example = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";
  EXPECT_EQ(load_job_config(example).data.kafka.assignment, "auto");
  EXPECT_NO_THROW(load_job_config(example, {"strategy.name=allreduce", "training.steps=100", "data.kafka.assignment=job"}));
  EXPECT_NO_THROW(load_job_config(example, {"data.kafka.assignment=group"}));
  EXPECT_NO_THROW(load_job_config(example, {"data.kafka.assignment=job"}));  // the example is a ps job
  try {
    load_job_config(example, {"data.kafka.assignment=broker"});
    ADD_FAILURE() << "assignment broker was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'broker' is not supported: expected auto, group or job"), std::string::npos)
        << e.what();
  }
}

// A config switched from ps keeps its cluster.ps: strategies without servers ignore it.
TEST(JobConfig, ServersGivenToAStrategyWithoutThemAreIgnored) {
  const std::string example = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";
  const JobConfig ps = load_job_config(example);
  ASSERT_GE(ps.cluster.ps, 1);
  EXPECT_EQ(ps.cluster.ignored_ps, 0);
  const JobConfig allreduce = load_job_config(example, {"strategy.name=allreduce"});
  EXPECT_EQ(allreduce.cluster.ps, 0) << "no server is started or waited for";
  EXPECT_EQ(allreduce.cluster.ignored_ps, ps.cluster.ps);
  EXPECT_EQ(load_job_config(example, {"strategy.name=allreduce", "cluster.ps=0"}).cluster.ignored_ps, 0);
}

TEST(JobConfig, BadLayerTypeAndActivation) {
  EXPECT_NE(error_of(kJob, {"model.layers.0.type=flaten"}).find("'flaten' is not a layer type"), std::string::npos);
  std::string yaml = kJob;
  yaml.replace(yaml.find("activation: relu"), 16, "activation: rleu");
  EXPECT_NE(error_of(yaml).find("unknown activation 'rleu'"), std::string::npos);
}

TEST(JobConfig, InvalidYamlNamesLine) {
  std::string e = error_of("model: [unclosed");
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
  EXPECT_NE(e.find("line"), std::string::npos) << e;
}

TEST(JobConfig, MissingFileIsNotFound) {
  EXPECT_THROW(load_job_config("/nonexistent/job.yaml"), NotFound);
}

TEST(JobConfig, BuildsTheModel) {
  JobConfig j = parse_job_config(kJob, "job.yaml");
  auto model = build_model(j.model);
  EXPECT_EQ(model->layers().size(), 3u);
  EXPECT_EQ(model->layers()[1]->name(), "dense_1");
  std::string summary = model->summary(Shape{2, 1, 4, 4});
  EXPECT_NE(summary.find("dense_1"), std::string::npos);
  EXPECT_NE(summary.find("163"), std::string::npos) << summary;  // 16*8+8 + 8*3+3 = 163
}

TEST(EditDistance, Basics) {
  EXPECT_EQ(edit_distance("batch", "bach"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

}  // namespace
}  // namespace trib::config
