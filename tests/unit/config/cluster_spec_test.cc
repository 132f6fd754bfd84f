// cluster.spec: a static list of host:port per role, as an alternative to counts.
#include <gtest/gtest.h>

#include "trib/config/job_config.h"

namespace trib::config {
namespace {

const std::string kJob = R"(
name: t
model:
  input: [4]
  classes: 3
  layers:
    - {type: dense, units: 3}
data:
  format: idx
  train: {images: a, labels: b}
  test: {images: c, labels: d}
training: {steps: 10, batch: 16}
strategy: {name: ps}
)";

JobConfig parse_cluster(const std::string& cluster) { return parse_job_config(kJob + cluster, "job.yaml"); }

std::string error_of(const std::string& cluster) {
  try {
    parse_cluster(cluster);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterSpec, CountsAndCoordinatorComeFromTheLists) {
  JobConfig j = parse_cluster(R"(cluster:
  spec:
    coordinator: "head:7000"
    ps: ["h1:7001", "h2:7001"]
    workers: ["h3:7002", "h4:7002", "[fd00::5]:7002"]
)");
  EXPECT_TRUE(j.cluster.enabled);
  ASSERT_TRUE(j.cluster.has_spec);
  EXPECT_EQ(j.cluster.ps, 2);
  EXPECT_EQ(j.cluster.workers, 3);
  EXPECT_EQ(j.cluster.coordinator, "head:7000");
  EXPECT_EQ(j.cluster.spec.ps[1].host, "h2");
  EXPECT_EQ(j.cluster.spec.ps[1].port, 7001);
  EXPECT_EQ(j.cluster.spec.workers[2].host, "fd00::5");
  EXPECT_EQ(j.cluster.spec.workers[2].to_string(), "[fd00::5]:7002");
}

TEST(ClusterSpec, CountsBesideTheListsMayRepeatThem) {
  JobConfig j = parse_cluster(R"(cluster:
  ps: 1
  workers: 1
  coordinator: "head:7000"
  spec: {coordinator: "head:7000", ps: ["h1:7001"], workers: ["h2:7002"]}
)");
  EXPECT_EQ(j.cluster.ps, 1);
  EXPECT_EQ(j.cluster.workers, 1);
}

TEST(ClusterSpec, TheSpecSurvivesIntoTheResolvedJob) {
  // Roles get the job from the coordinator as resolved YAML: they must see the same spec.
  JobConfig j = parse_cluster("cluster: {spec: {coordinator: 'head:7000', ps: ['h1:7001'], workers: ['h2:7002']}}\n");
  JobConfig again = parse_job_config(j.resolved_yaml, "the coordinator's job");
  ASSERT_TRUE(again.cluster.has_spec);
  EXPECT_EQ(again.cluster.spec.ps[0].to_string(), "h1:7001");
}

TEST(ClusterSpec, WithoutASpecCountsAreUsed) {
  JobConfig j = parse_cluster("cluster: {ps: 2, workers: 3}\n");
  EXPECT_FALSE(j.cluster.has_spec);
  EXPECT_EQ(j.cluster.ps, 2);
}

struct BadSpec {
  const char* cluster;
  const char* expected;  // the key and the reason the one-line error must give
};

class MalformedSpec : public ::testing::TestWithParam<BadSpec> {};

TEST_P(MalformedSpec, IsOneLineNamingTheKey) {
  std::string e = error_of(GetParam().cluster);
  ASSERT_FALSE(e.empty()) << GetParam().cluster;
  EXPECT_NE(e.find(GetParam().expected), std::string::npos) << e;
  EXPECT_NE(e.find("job.yaml"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, MalformedSpec,
    ::testing::Values(
        BadSpec{"cluster: {spec: {coordinator: 'head', workers: ['h:1']}}\n",
                "cluster.spec.coordinator 'head' is not host:port: it has no ':PORT'"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', workers: ['h:x']}}\n",
                "cluster.spec.workers[0] 'h:x' is not host:port: the port must be a number from 1 to 65535"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', workers: ['h:70000']}}\n",
                "cluster.spec.workers[0] 'h:70000'"},
        BadSpec{"cluster: {spec: {coordinator: 'head:0', workers: ['h:1']}}\n", "cluster.spec.coordinator 'head:0'"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', ps: [':7001'], workers: ['h:1']}}\n",
                "cluster.spec.ps[0] ':7001' is not host:port: the host is missing"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', ps: ['fd00::1:7001'], workers: ['h:1']}}\n",
                "write an IPv6 host in brackets"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', ps: ['h w:7001'], workers: ['h:1']}}\n",
                "'h w' is not a host name or address"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', ps: ['h1:7001', 'H1:7001'], workers: ['h:1']}}\n",
                "cluster.spec.ps[1] 'H1:7001' repeats cluster.spec.ps[0]"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', ps: ['h1:7001'], workers: ['head:7000']}}\n",
                "cluster.spec.workers[0] 'head:7000' repeats cluster.spec.coordinator"},
        BadSpec{"cluster: {ps: 2, spec: {coordinator: 'head:7000', ps: ['h1:7001'], workers: ['h:1']}}\n",
                "cluster.ps is 2 but cluster.spec.ps lists 1 address(es)"},
        BadSpec{"cluster: {workers: 3, spec: {coordinator: 'head:7000', ps: ['h1:7001'], workers: ['h:1']}}\n",
                "cluster.workers is 3 but cluster.spec.workers lists 1 address(es)"},
        BadSpec{"cluster: {coordinator: 'x:1', spec: {coordinator: 'head:7000', ps: ['h1:7001'], workers: ['h:1']}}\n",
                "cluster.coordinator 'x:1' disagrees with cluster.spec.coordinator 'head:7000'"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', ps: ['h1:7001']}}\n",
                "cluster.spec.workers must list at least one host:port"},
        BadSpec{"cluster: {spec: {ps: ['h1:7001'], workers: ['h:1']}}\n", "cluster.spec.coordinator is required"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', worker: ['h:1']}}\n",
                "unknown key 'cluster.spec.worker'; did you mean 'cluster.spec.workers'?"},
        BadSpec{"cluster: {spec: {coordinator: 'head:7000', ps: 'h1:7001', workers: ['h:1']}}\n",
                "cluster.spec.ps must be a list"},
        BadSpec{"cluster: {spec: 'head:7000'}\n", "cluster.spec must be a mapping"}));

}  // namespace
}  // namespace trib::config
