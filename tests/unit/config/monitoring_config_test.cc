// monitoring.* and training.log_every: defaults, values, and the errors that name them.
#include <gtest/gtest.h>

#include "trib/config/job_config.h"
#include "trib/core/error.h"

namespace trib::config {
namespace {

const char* kJob = R"(
name: t
model:
  input: [4]
  classes: 2
  layers:
    - {type: dense, units: 2}
data:
  format: idx
  train: {images: a, labels: b}
  test: {images: c, labels: d}
training: {epochs: 1, batch: 4}
)";

std::string error_of(const std::vector<std::string>& overrides) {
  try {
    parse_job_config(kJob, "job.yaml", overrides);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(MonitoringConfig, OffByDefaultOnLoopbackWithTensorBoard) {
  const JobConfig j = parse_job_config(kJob, "job.yaml");
  EXPECT_FALSE(j.monitoring.enabled());
  EXPECT_EQ(j.monitoring.port, 0);
  EXPECT_EQ(j.monitoring.bind, "127.0.0.1");
  EXPECT_TRUE(j.monitoring.token_file.empty());
  EXPECT_TRUE(j.monitoring.tensorboard);
  EXPECT_EQ(j.training.log_every, 0);
}

TEST(MonitoringConfig, ReadsEveryKey) {
  const JobConfig j = parse_job_config(kJob, "job.yaml",
                                       {"monitoring.port=9400", "monitoring.bind=0.0.0.0", "monitoring.token_file=/t",
                                        "monitoring.tensorboard=false", "training.log_every=10"});
  EXPECT_TRUE(j.monitoring.enabled());
  EXPECT_EQ(j.monitoring.port, 9400);
  EXPECT_EQ(j.monitoring.bind, "0.0.0.0");
  EXPECT_EQ(j.monitoring.token_file, "/t");
  EXPECT_FALSE(j.monitoring.tensorboard);
  EXPECT_EQ(j.training.log_every, 10);
}

TEST(MonitoringConfig, BadValuesAreRefusedNamingTheKey) {
  EXPECT_NE(error_of({"monitoring.port=70000"}).find("monitoring.port"), std::string::npos);
  EXPECT_NE(error_of({"monitoring.port=-1"}).find("monitoring.port"), std::string::npos);
  EXPECT_NE(error_of({"monitoring.bind=\"\""}).find("monitoring.bind"), std::string::npos);
  EXPECT_NE(error_of({"training.log_every=-5"}).find("training.log_every"), std::string::npos);
  EXPECT_NE(error_of({"monitoring.prot=1"}).find("monitoring.prot"), std::string::npos);
}

}  // namespace
}  // namespace trib::config
