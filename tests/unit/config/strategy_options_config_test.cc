// The strategies' options: strategy.ps_replicas (0 or 1, and a backup needs another server
// to live on), strategy.ps_pull_ahead (off by default; async only), and the ring's window,
// strategy.segment_kib and strategy.pipeline_depth (256 KiB x 4 by default).
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
optimizer: {name: adam, lr: 0.01}
training: {epochs: 2, batch: 16}
cluster: {ps: 2, workers: 2}
strategy: {name: ps}
)";

std::string error_of(const std::vector<std::string>& overrides) {
  try {
    parse_job_config(kJob, "job.yaml", overrides);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(PsReplicasConfig, DefaultsToNoneAndTakesOne) {
  EXPECT_EQ(parse_job_config(kJob, "job.yaml").strategy.ps_replicas, 0);
  EXPECT_EQ(parse_job_config(kJob, "job.yaml", {"strategy.ps_replicas=1"}).strategy.ps_replicas, 1);
}

TEST(PsReplicasConfig, OneServerIsRefusedInOneLineNamingTheKey) {
  const std::string e = error_of({"strategy.ps_replicas=1", "cluster.ps=1"});
  EXPECT_NE(e.find("strategy.ps_replicas: 1 needs strategy ps with cluster.ps >= 2"), std::string::npos) << e;
  EXPECT_NE(e.find("got 1 server(s)"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(PsReplicasConfig, OnlyZeroOrOne) {
  EXPECT_NE(error_of({"strategy.ps_replicas=2"}).find("strategy.ps_replicas must be 0 or 1"), std::string::npos);
  EXPECT_NE(error_of({"strategy.ps_replicas=-1"}).find("strategy.ps_replicas must be 0 or 1"), std::string::npos);
}

TEST(PsReplicasConfig, AllreduceHasNoServersToBackUp) {
  EXPECT_NE(error_of({"strategy.ps_replicas=1", "strategy.name=allreduce"}).find("needs strategy ps"),
            std::string::npos);
}

TEST(PsPullAheadConfig, OffByDefaultAndTakenForAsync) {
  EXPECT_FALSE(parse_job_config(kJob, "job.yaml").strategy.ps_pull_ahead);
  EXPECT_TRUE(parse_job_config(kJob, "job.yaml", {"strategy.ps_pull_ahead=true"}).strategy.ps_pull_ahead);
}

// A pull ahead of its push lacks that push, which the other modes' rounds count on.
TEST(PsPullAheadConfig, OtherModesAreRefusedInOneLineNamingTheKey) {
  for (const char* mode : {"sync", "bounded", "averaging"}) {
    const std::string e = error_of({"strategy.ps_pull_ahead=true", std::string("strategy.mode=") + mode});
    EXPECT_NE(e.find("strategy.ps_pull_ahead needs strategy.mode: async"), std::string::npos) << mode << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(AllreduceWindowConfig, DefaultsToFourPiecesOf256KiB) {
  const StrategyConfig s = parse_job_config(kJob, "job.yaml").strategy;
  EXPECT_EQ(s.segment_kib, 256);
  EXPECT_EQ(s.pipeline_depth, 4);
}

TEST(AllreduceWindowConfig, TakesOtherSizes) {
  const StrategyConfig s =
      parse_job_config(kJob, "job.yaml", {"strategy.segment_kib=1024", "strategy.pipeline_depth=16"}).strategy;
  EXPECT_EQ(s.segment_kib, 1024);
  EXPECT_EQ(s.pipeline_depth, 16);
}

TEST(AllreduceWindowConfig, RefusesSizesOutOfRangeNamingBoth) {
  for (const char* bad : {"strategy.segment_kib=0", "strategy.segment_kib=2", "strategy.segment_kib=65537",
                          "strategy.pipeline_depth=0", "strategy.pipeline_depth=257", "strategy.pipeline_depth=-1"}) {
    const std::string e = error_of({bad});
    EXPECT_NE(e.find("strategy.segment_kib must be 4..65536 and pipeline_depth 1..256"), std::string::npos)
        << bad << ": " << e;
  }
}

}  // namespace
}  // namespace trib::config
