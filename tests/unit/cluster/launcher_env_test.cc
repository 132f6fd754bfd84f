// Rank and size from Slurm's, Open MPI's, PMI's, torchrun's and Kubernetes' environment
// variables; the coordinator's address from MASTER_ADDR and MASTER_PORT.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "cluster/launcher_env.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

const char* const kVariables[] = {"SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                  "PMI_RANK",     "PMI_SIZE",     "RANK",                 "WORLD_SIZE",
                                  "JOB_COMPLETION_INDEX",         "MASTER_ADDR",          "MASTER_PORT"};

// Sets exactly the given launcher variables for one test, and puts back what was there
// (the test may itself run under srun or mpirun).
class LauncherEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVariables) {
      if (const char* old = std::getenv(v)) saved_[v] = old;
      ::unsetenv(v);
    }
  }
  void TearDown() override {
    for (const char* v : kVariables) ::unsetenv(v);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

  static std::string error() {
    try {
      detect_launcher_rank();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  }
  static std::string coordinator_error() {
    try {
      launcher_coordinator();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(LauncherEnv, NoneSetIsNoRank) {
  EXPECT_FALSE(detect_launcher_rank().has_value());
  try {
    launcher_rank();
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("srun, mpirun, torchrun or a Kubernetes indexed Job"), std::string::npos) << m;
    EXPECT_NE(m.find("SLURM_PROCID"), std::string::npos) << m;
    EXPECT_NE(m.find("OMPI_COMM_WORLD_RANK"), std::string::npos) << m;
    EXPECT_NE(m.find("PMI_RANK"), std::string::npos) << m;
    EXPECT_NE(m.find("RANK/WORLD_SIZE"), std::string::npos) << m;
    EXPECT_NE(m.find("JOB_COMPLETION_INDEX"), std::string::npos) << m;
  }
}

TEST_F(LauncherEnv, ReadsSlurm) {
  set("SLURM_PROCID", "2");
  set("SLURM_NTASKS", "5");
  LauncherRank r = launcher_rank();
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.size, 5);
  EXPECT_EQ(r.launcher, "Slurm");
  EXPECT_EQ(r.rank_variable, "SLURM_PROCID");
}

TEST_F(LauncherEnv, ReadsOpenMpi) {
  set("OMPI_COMM_WORLD_RANK", "0");
  set("OMPI_COMM_WORLD_SIZE", "3");
  LauncherRank r = launcher_rank();
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.size, 3);
  EXPECT_EQ(r.launcher, "Open MPI");
}

TEST_F(LauncherEnv, ReadsPmi) {
  set("PMI_RANK", "1");
  set("PMI_SIZE", "2");
  LauncherRank r = launcher_rank();
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.launcher, "PMI");
}

TEST_F(LauncherEnv, SlurmComesBeforeOpenMpiAndOpenMpiBeforePmi) {
  set("PMI_RANK", "7");
  set("PMI_SIZE", "8");
  set("OMPI_COMM_WORLD_RANK", "1");
  set("OMPI_COMM_WORLD_SIZE", "4");
  EXPECT_EQ(launcher_rank().launcher, "Open MPI");
  set("SLURM_PROCID", "3");
  set("SLURM_NTASKS", "4");
  LauncherRank r = launcher_rank();
  EXPECT_EQ(r.launcher, "Slurm");
  EXPECT_EQ(r.rank, 3);
}

TEST_F(LauncherEnv, AHalfSetPairIsAnErrorNamingTheMissingVariable) {
  set("SLURM_PROCID", "0");
  std::string e = error();
  EXPECT_NE(e.find("SLURM_PROCID is set but SLURM_NTASKS is not"), std::string::npos) << e;
  ::unsetenv("SLURM_PROCID");
  set("OMPI_COMM_WORLD_SIZE", "2");
  e = error();
  EXPECT_NE(e.find("OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not"), std::string::npos) << e;
}

TEST_F(LauncherEnv, ValuesThatAreNotARankBelowTheSizeAreErrorsNamingTheVariable) {
  set("SLURM_PROCID", "x1");
  set("SLURM_NTASKS", "3");
  EXPECT_NE(error().find("SLURM_PROCID='x1' is not a non-negative integer"), std::string::npos) << error();
  set("SLURM_PROCID", "-1");
  EXPECT_NE(error().find("SLURM_PROCID='-1'"), std::string::npos) << error();
  set("SLURM_PROCID", "3");
  EXPECT_NE(error().find("SLURM_PROCID=3 is not a rank below SLURM_NTASKS=3"), std::string::npos) << error();
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "0");
  EXPECT_NE(error().find("SLURM_PROCID=0 is not a rank below SLURM_NTASKS=0"), std::string::npos) << error();
  set("SLURM_NTASKS", "");
  EXPECT_NE(error().find("SLURM_NTASKS='' is not a non-negative integer"), std::string::npos) << error();
}

TEST_F(LauncherEnv, ReadsTorchrun) {
  set("RANK", "2");
  set("WORLD_SIZE", "4");
  LauncherRank r = launcher_rank();
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.launcher, "torchrun");
  EXPECT_EQ(r.size_variable, "WORLD_SIZE");
  ::unsetenv("WORLD_SIZE");
  EXPECT_NE(error().find("RANK is set but WORLD_SIZE is not: a torchrun launch sets both"), std::string::npos)
      << error();
}

// An indexed Job gives each pod its index and nothing else: the rank, with the size unknown
// here (trib node --size, or the job's counts, tell).
TEST_F(LauncherEnv, AKubernetesCompletionIndexGivesTheRankOnly) {
  set("JOB_COMPLETION_INDEX", "3");
  LauncherRank r = launcher_rank();
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.size, -1);
  EXPECT_EQ(r.launcher, "Kubernetes");
  EXPECT_EQ(r.rank_variable, "JOB_COMPLETION_INDEX");
  EXPECT_EQ(r.size_variable, "");
  set("JOB_COMPLETION_INDEX", "three");
  EXPECT_NE(error().find("JOB_COMPLETION_INDEX='three' is not a non-negative integer"), std::string::npos) << error();
}

TEST_F(LauncherEnv, MpiLaunchersComeBeforeTorchrunAndTorchrunBeforeKubernetes) {
  set("JOB_COMPLETION_INDEX", "0");
  set("RANK", "1");
  set("WORLD_SIZE", "2");
  EXPECT_EQ(launcher_rank().launcher, "torchrun");
  set("PMI_RANK", "0");
  set("PMI_SIZE", "2");
  EXPECT_EQ(launcher_rank().launcher, "PMI");
}

TEST_F(LauncherEnv, MasterAddrAndPortGiveTheCoordinator) {
  EXPECT_FALSE(launcher_coordinator().has_value());
  set("MASTER_ADDR", "10.0.0.1");
  set("MASTER_PORT", "29500");
  EXPECT_EQ(launcher_coordinator(), "10.0.0.1:29500");
  set("MASTER_ADDR", "fd00::1");
  EXPECT_EQ(launcher_coordinator(), "[fd00::1]:29500");
  set("MASTER_ADDR", "[fd00::1]");
  EXPECT_EQ(launcher_coordinator(), "[fd00::1]:29500");
  set("MASTER_PORT", "70000");
  EXPECT_NE(coordinator_error().find("MASTER_PORT='70000' is not a port in 1..65535"), std::string::npos)
      << coordinator_error();
  ::unsetenv("MASTER_PORT");
  EXPECT_NE(coordinator_error().find("MASTER_ADDR is set but MASTER_PORT is not"), std::string::npos)
      << coordinator_error();
}

}  // namespace
}  // namespace trib::cluster
