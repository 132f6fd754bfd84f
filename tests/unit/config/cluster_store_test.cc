// cluster.store: "" (the coordinator's built-in store) or an etcd cluster's URL.
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

TEST(ClusterStore, DefaultsToTheCoordinatorsOwnStore) {
  EXPECT_EQ(parse_cluster("cluster: {ps: 1, workers: 2}\n").cluster.store, "");
  EXPECT_EQ(parse_job_config(kJob, "job.yaml").cluster.store, "");
}

TEST(ClusterStore, AnEtcdUrlIsKeptAndSurvivesIntoTheResolvedJob) {
  JobConfig j = parse_cluster("cluster: {ps: 1, workers: 2, store: 'etcd://h1:2379,h2:2379,h3:2379'}\n");
  EXPECT_EQ(j.cluster.store, "etcd://h1:2379,h2:2379,h3:2379");
  EXPECT_EQ(parse_job_config(j.resolved_yaml, "the coordinator's job").cluster.store, j.cluster.store);
}

TEST(ClusterStore, ABadStoreFailsNamingTheKeyAndWhatWasExpected) {
  auto error_of = [](const std::string& store) -> std::string {
    try {
      parse_cluster("cluster: {ps: 1, workers: 2, store: '" + store + "'}\n");
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  std::string scheme = error_of("zk://h1:2181");
  EXPECT_NE(scheme.find("config job.yaml: cluster.store: store 'zk://h1:2181' is not supported"), std::string::npos)
      << scheme;
  std::string port = error_of("etcd://h1:2379,h2");
  EXPECT_NE(port.find("cluster.store: etcd URL 'etcd://h1:2379,h2': endpoint 2 'h2' is not host:port"),
            std::string::npos)
      << port;
}

}  // namespace
}  // namespace trib::config
