// The Kubernetes manifests in deploy/k8s: each file parses, and the pieces agree with each
// other (names, ports, replica counts against the job in the ConfigMap), since no cluster
// checks them here.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "trib/config/job_config.h"

namespace trib::config {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(TRIB_SOURCE_DIR) / "deploy" / "k8s";

// Every document of every manifest, by kind and name ("StatefulSet/ps").
std::map<std::string, YAML::Node> load_manifests() {
  std::map<std::string, YAML::Node> out;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() != ".yaml" && entry.path().extension() != ".yml") continue;
    std::vector<YAML::Node> docs;
    try {
      docs = YAML::LoadAllFromFile(entry.path().string());
    } catch (const YAML::Exception& e) {
      ADD_FAILURE() << entry.path() << " is not valid YAML: " << e.what();
      continue;
    }
    for (const YAML::Node& d : docs) {
      if (d.IsNull()) continue;
      EXPECT_TRUE(d["apiVersion"] && d["kind"] && d["metadata"]["name"])
          << entry.path() << ": every object needs apiVersion, kind and metadata.name";
      if (d["kind"] && d["metadata"]["name"])
        out[d["kind"].as<std::string>() + "/" + d["metadata"]["name"].as<std::string>()] = d;
    }
  }
  return out;
}

std::vector<std::string> args_of(const YAML::Node& set) {
  return set["spec"]["template"]["spec"]["containers"][0]["args"].as<std::vector<std::string>>();
}

std::string after(const std::vector<std::string>& args, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return args[i + 1];
  return "";
}

TEST(DeployManifests, EveryFileParsesAndTheExpectedObjectsExist) {
  ASSERT_TRUE(fs::is_directory(kDir)) << kDir;
  auto m = load_manifests();
  for (const char* name : {"Service/trib", "ConfigMap/trib-job", "StatefulSet/coordinator", "StatefulSet/ps",
                           "StatefulSet/worker"})
    EXPECT_TRUE(m.count(name)) << name << " is missing from deploy/k8s";
}

TEST(DeployManifests, TheServiceIsHeadlessAndServesTheCoordinatorPort) {
  auto m = load_manifests();
  YAML::Node svc = m["Service/trib"];
  ASSERT_TRUE(svc);
  EXPECT_EQ(svc["spec"]["clusterIP"].as<std::string>(), "None") << "headless: one DNS name per pod";
  EXPECT_EQ(svc["spec"]["ports"][0]["port"].as<int>(), 7000);
}

TEST(DeployManifests, RolesJoinTheCoordinatorByItsStableNameWithTheSharedSecret) {
  auto m = load_manifests();
  YAML::Node coordinator = m["StatefulSet/coordinator"];
  ASSERT_TRUE(coordinator);
  EXPECT_EQ(coordinator["spec"]["serviceName"].as<std::string>(), "trib");
  EXPECT_EQ(coordinator["spec"]["replicas"].as<int>(), 1);
  std::vector<std::string> cargs = args_of(coordinator);
  EXPECT_EQ(cargs[0], "coordinator");
  EXPECT_EQ(after(cargs, "--listen"), "0.0.0.0:7000");
  // The secret comes from a Kubernetes Secret through the environment (a mounted file would
  // be readable by the pod's fsGroup, which trib refuses).
  auto secret_of = [](const YAML::Node& set) {
    YAML::Node env = set["spec"]["template"]["spec"]["containers"][0]["env"][0];
    EXPECT_EQ(env["name"].as<std::string>(), "TRIB_CLUSTER_SECRET");
    return env["valueFrom"]["secretKeyRef"]["name"].as<std::string>();
  };
  std::string secret_name = secret_of(coordinator);
  EXPECT_EQ(after(cargs, "--secret-file"), "") << "no secret file: it would be group-readable";
  for (const char* role : {"ps", "worker"}) {
    YAML::Node set = m[std::string("StatefulSet/") + role];
    ASSERT_TRUE(set) << role;
    EXPECT_EQ(set["spec"]["serviceName"].as<std::string>(), "trib") << role;
    EXPECT_EQ(set["spec"]["selector"]["matchLabels"]["role"].as<std::string>(),
              set["spec"]["template"]["metadata"]["labels"]["role"].as<std::string>())
        << role;
    std::vector<std::string> a = args_of(set);
    EXPECT_EQ(a[0], role);
    // <statefulset>-0.<service>: the coordinator's pod DNS name through the headless Service.
    EXPECT_EQ(after(a, "--join"), "coordinator-0.trib:7000") << role;
    EXPECT_EQ(after(a, "--bind"), "0.0.0.0") << role;
    EXPECT_EQ(after(a, "--secret-file"), "") << role;
    EXPECT_EQ(secret_of(set), secret_name) << role;
  }
}

TEST(DeployManifests, TheJobInTheConfigMapParsesAndMatchesTheReplicas) {
  auto m = load_manifests();
  YAML::Node cm = m["ConfigMap/trib-job"];
  ASSERT_TRUE(cm);
  JobConfig job = parse_job_config(cm["data"]["job.yaml"].as<std::string>(), "deploy/k8s/job-configmap.yaml");
  ASSERT_TRUE(job.cluster.enabled);
  EXPECT_EQ(job.strategy.name, StrategyName::ps);
  EXPECT_EQ(job.cluster.ps, m["StatefulSet/ps"]["spec"]["replicas"].as<int>());
  EXPECT_EQ(job.cluster.workers, m["StatefulSet/worker"]["spec"]["replicas"].as<int>());
  // The coordinator reads the job where the ConfigMap is mounted.
  std::vector<std::string> cargs = args_of(m["StatefulSet/coordinator"]);
  std::string mount;
  for (const YAML::Node& v : m["StatefulSet/coordinator"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"])
    if (v["name"].as<std::string>() == "job") mount = v["mountPath"].as<std::string>();
  EXPECT_EQ(cargs[1], mount + "/job.yaml");
}

// Checkpoints need no shared filesystem: the chief (pod worker-0, by its ordinal) writes them
// all to its own persistent volume; the servers write nothing. An emptyDir per pod lost the
// checkpoint with the pod, and the servers' shards never reached the chief's.
TEST(DeployManifests, CheckpointsLiveOnTheChiefsPersistentVolumeAndServersWriteNothing) {
  auto m = load_manifests();
  YAML::Node worker = m["StatefulSet/worker"], ps = m["StatefulSet/ps"];
  ASSERT_TRUE(worker && ps);
  EXPECT_EQ(after(args_of(worker), "--index"), "$(POD_INDEX)");
  bool pod_index = false;
  for (const YAML::Node& e : worker["spec"]["template"]["spec"]["containers"][0]["env"])
    if (e["name"].as<std::string>() == "POD_INDEX")
      pod_index = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>() ==
                  "metadata.labels['apps.kubernetes.io/pod-index']";
  EXPECT_TRUE(pod_index) << "worker-0 must be the chief";
  bool claimed = false;
  for (const YAML::Node& c : worker["spec"]["volumeClaimTemplates"])
    claimed = claimed || c["metadata"]["name"].as<std::string>() == "runs";
  EXPECT_TRUE(claimed) << "the chief's /runs must outlive its pod";
  for (const YAML::Node& v : worker["spec"]["template"]["spec"]["volumes"])
    EXPECT_NE(v["name"].as<std::string>(), "runs") << "a pod volume (emptyDir) dies with the pod";
  for (const YAML::Node& v : ps["spec"]["template"]["spec"]["containers"][0]["volumeMounts"])
    EXPECT_NE(v["mountPath"].as<std::string>(), "/runs") << "servers send their shards to the chief";
  // Room for cluster.preemption_grace_s (25 s) inside Kubernetes' own grace.
  for (const YAML::Node& set : {worker, ps})
    EXPECT_GE(set["spec"]["template"]["spec"]["terminationGracePeriodSeconds"].as<int>(), 30);
}

// The coordinator journals the job under its --output: that directory is on a persistent volume
// of its own, so that a coordinator pod started again takes the running job back.
TEST(DeployManifests, TheCoordinatorsJournalOutlivesItsPod) {
  auto m = load_manifests();
  YAML::Node coordinator = m["StatefulSet/coordinator"];
  ASSERT_TRUE(coordinator);
  const std::string output = after(args_of(coordinator), "--output");
  ASSERT_FALSE(output.empty()) << "the coordinator needs --output for its journal";
  std::string claimed_mount;
  for (const YAML::Node& c : coordinator["spec"]["volumeClaimTemplates"])
    for (const YAML::Node& v : coordinator["spec"]["template"]["spec"]["containers"][0]["volumeMounts"])
      if (v["name"].as<std::string>() == c["metadata"]["name"].as<std::string>())
        claimed_mount = v["mountPath"].as<std::string>();
  ASSERT_FALSE(claimed_mount.empty()) << "no persistent volume is mounted in the coordinator";
  EXPECT_TRUE(output.starts_with(claimed_mount + "/")) << output << " is not on the volume at " << claimed_mount;
}

}  // namespace
}  // namespace trib::config
