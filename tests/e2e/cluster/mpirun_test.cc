// `mpirun -np 3 trib node --join ... --ps 1`: Open MPI starts the roles, each reads its rank
// from OMPI_COMM_WORLD_RANK and becomes a parameter server or a worker.
#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

TEST(Launchers, MpirunStartsOneParameterServerAndTwoWorkersThatTrainToTheEnd) {
  std::string mpirun = find_program("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not installed (Debian: apt-get install openmpi-bin)";
  TempDir dir("mpirun");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 2}\n"));
  Trib coordinator("coordinator", {"coordinator", job, "--listen", "127.0.0.1:0", "--secret-file", secret, "--output",
                                   (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  std::string address = coordinator.find("listening at (127\\.0\\.0\\.1:[0-9]+)");
  ASSERT_FALSE(address.empty()) << coordinator.output();

  // As root (CI containers) Open MPI wants --allow-run-as-root; --oversubscribe lets three
  // processes share fewer cores.
  Trib nodes("mpirun", {"node", "--join", address, "--ps", "1", "--secret-file", secret, "--timeout", "30"},
             {mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3"});
  std::vector<Trib*> all{&coordinator, &nodes};
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && nodes.exited(); }, 180s)) << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(nodes.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(coordinator.printed("every worker finished")) << transcript(all);
  EXPECT_TRUE(nodes.printed("node: rank 0 of 3 (Open MPI) is a parameter server")) << transcript(all);
  EXPECT_TRUE(nodes.printed("node: rank 1 of 3 (Open MPI) is a worker")) << transcript(all);
  EXPECT_TRUE(nodes.printed("node: rank 2 of 3 (Open MPI) is a worker")) << transcript(all);
  EXPECT_TRUE(nodes.printed("done: test accuracy")) << transcript(all);
}

TEST(Launchers, NodeWithoutALauncherSaysWhatItLookedFor) {
  TempDir dir("nolauncher");
  std::string secret = dir.file("secret", kSecretHex);
  // Run it with the launcher variables removed, whatever launched this test.
  std::vector<std::string> wrapper{find_program("env")};
  for (const char* v : {"SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                        "PMI_SIZE", "RANK", "WORLD_SIZE", "JOB_COMPLETION_INDEX"})
    wrapper.insert(wrapper.end(), {"-u", v});
  Trib node("node", {"node", "--join", "127.0.0.1:1", "--ps", "1", "--secret-file", secret}, wrapper);
  ASSERT_TRUE(wait_exit(node, 10s)) << node.output();
  EXPECT_EQ(node.exit_code(), 2) << node.output();
  EXPECT_TRUE(node.printed(
      "trib: error: no launcher rank found: start this under srun, mpirun, torchrun or a Kubernetes indexed Job"))
      << node.output();
  EXPECT_EQ(line_count(node.output()), 1u) << node.output();
}

TEST(Launchers, NodeRefusesASplitThatLeavesNoWorkers) {
  TempDir dir("noworkers");
  std::string secret = dir.file("secret", kSecretHex);
  Trib node("node", {"node", "--join", "127.0.0.1:1", "--ps", "2", "--secret-file", secret}, {},
            {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
  ASSERT_TRUE(wait_exit(node, 10s)) << node.output();
  EXPECT_EQ(node.exit_code(), 2) << node.output();
  EXPECT_TRUE(node.printed("--ps 2 leaves no workers among the 2 processes of this launch (SLURM_NTASKS=2)"))
      << node.output();
}

// A Kubernetes indexed Job: each pod reads its rank from JOB_COMPLETION_INDEX, and finds the
// coordinator through MASTER_ADDR and MASTER_PORT (no --join); the launch's size comes from
// the job, as the indexed Job does not give it.
TEST(Launchers, KubernetesIndexesAndMasterAddrStartTheRolesWithoutJoin) {
  TempDir dir("k8sindex");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 2}\n"));
  Trib coordinator("coordinator", {"coordinator", job, "--listen", "127.0.0.1:0", "--secret-file", secret, "--output",
                                   (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  std::string port = coordinator.find("listening at 127\\.0\\.0\\.1:([0-9]+)");
  ASSERT_FALSE(port.empty()) << coordinator.output();

  std::vector<std::unique_ptr<Trib>> pods;
  for (int i = 0; i < 3; ++i)
    pods.push_back(std::make_unique<Trib>(
        "pod" + std::to_string(i), std::vector<std::string>{"node", "--ps", "1", "--secret-file", secret, "--timeout", "30"},
        std::vector<std::string>{},
        std::map<std::string, std::string>{
            {"JOB_COMPLETION_INDEX", std::to_string(i)}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}}));
  std::vector<Trib*> all{&coordinator};
  for (auto& p : pods) all.push_back(p.get());
  ASSERT_TRUE(wait_until(all, [&] { return std::all_of(all.begin(), all.end(), [](Trib* p) { return p->exited(); }); },
                         180s))
      << transcript(all);
  for (Trib* p : all) EXPECT_EQ(p->exit_code(), 0) << transcript(all);
  EXPECT_TRUE(coordinator.printed("every worker finished")) << transcript(all);
  EXPECT_TRUE(pods[0]->printed("node: rank 0 (Kubernetes) is a parameter server")) << transcript(all);
  EXPECT_TRUE(pods[2]->printed("node: rank 2 (Kubernetes) is a worker")) << transcript(all);
}

TEST(Launchers, NodeWithoutJoinOrMasterAddrSaysSo) {
  TempDir dir("nojoin");
  std::string secret = dir.file("secret", kSecretHex);
  std::vector<std::string> wrapper{find_program("env"), "-u", "MASTER_ADDR", "-u", "MASTER_PORT"};
  Trib node("node", {"node", "--ps", "1", "--secret-file", secret}, wrapper, {{"RANK", "1"}, {"WORLD_SIZE", "3"}});
  ASSERT_TRUE(wait_exit(node, 10s)) << node.output();
  EXPECT_EQ(node.exit_code(), 2) << node.output();
  EXPECT_TRUE(node.printed("trib: error: --join is required: the coordinator's HOST:PORT (or set MASTER_ADDR and "
                           "MASTER_PORT)"))
      << node.output();
}

}  // namespace
}  // namespace trib::testing
