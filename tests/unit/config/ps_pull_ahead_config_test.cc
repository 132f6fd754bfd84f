// strategy.ps_pull_ahead: off by default, and only for asynchronous parameter servers (a pull
// ahead of its push lacks that push, which the other modes' rounds count on).
#include <gtest/gtest.h>

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
    - {type: dense, units: 3}
data:
  format: idx
  train: {images: a, labels: b}
  test: {images: c, labels: d}
optimizer: {name: sgd, lr: 0.01}
training: {epochs: 2, batch: 16}
cluster: {ps: 1, workers: 2}
strategy: {name: ps, mode: async}
)";

std::string error_of(const std::vector<std::string>& overrides) {
  try {
    parse_job_config(kJob, "job.yaml", overrides);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(PsPullAheadConfig, OffByDefaultAndTakenForAsync) {
  EXPECT_FALSE(parse_job_config(kJob, "job.yaml").strategy.ps_pull_ahead);
  EXPECT_TRUE(parse_job_config(kJob, "job.yaml", {"strategy.ps_pull_ahead=true"}).strategy.ps_pull_ahead);
}

TEST(PsPullAheadConfig, OtherModesAreRefusedInOneLineNamingTheKey) {
  for (const char* mode : {"sync", "bounded", "averaging"}) {
    const std::string e = error_of({"strategy.ps_pull_ahead=true", std::string("strategy.mode=") + mode});
    EXPECT_NE(e.find("strategy.ps_pull_ahead needs strategy.mode: async"), std::string::npos) << mode << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace trib::config
