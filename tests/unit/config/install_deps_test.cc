// scripts/install-deps.sh installs per task: `make train` and `make test` get no benchmark
// peer, `make bench` gets them all, and the programs the tests run are in the test set.
// (In this binary because it is the one that reads files of the source tree.)
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>

namespace trib::config {
namespace {

// The packages `install-deps.sh --list SETS` names (it installs nothing).
std::set<std::string> packages(const std::string& sets) {
  const std::string command = "bash " + std::string(TRIB_SOURCE_DIR) + "/scripts/install-deps.sh --list " + sets;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::set<std::string> out;
  char line[256];
  while (pipe && std::fgets(line, sizeof line, pipe.get()) != nullptr) {
    std::string p(line);
    while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
    if (!p.empty()) out.insert(p);
  }
  return out;
}

const char* const kBenchPeers[] = {"python3-torch", "openmpi-bin", "libopenmpi-dev", "iperf3", "kcat",
                                   "libopenblas0-pthread"};

TEST(InstallDeps, TrainingInstallsNoBenchmarkPeerAndNoCompilerItDoesNotUse) {
  const std::set<std::string> train = packages("build data");
  ASSERT_TRUE(train.contains("libdnnl-dev") && train.contains("dataset-fashion-mnist")) << "the sets were listed";
  for (const char* p : kBenchPeers) EXPECT_FALSE(train.contains(p)) << p;
  EXPECT_FALSE(train.contains("clang")) << "the build uses gcc; .ci/run installs clang-16 for fuzzing";
  EXPECT_FALSE(train.contains("libgtest-dev")) << "training builds no tests";
}

TEST(InstallDeps, TestsGetWhatTheyRunAndNoPyTorch) {
  const std::set<std::string> test = packages("build data test");
  for (const char* p : {"libgtest-dev", "libgmock-dev", "kcat", "iproute2", "openmpi-bin", "prometheus", "python3-protobuf",
                        "chromium"})
    EXPECT_TRUE(test.contains(p)) << p << ": a test uses it";
  for (const char* p : {"python3-torch", "iperf3", "libopenblas0-pthread", "libopenmpi-dev"})
    EXPECT_FALSE(test.contains(p)) << p << ": only the benchmarks use it";
}

TEST(InstallDeps, ThePythonPackageBuildsAndIsTested) {
  const std::set<std::string> build = packages("build");
  for (const char* p : {"pybind11-dev", "python3-dev", "python3-numpy"}) EXPECT_TRUE(build.contains(p)) << p;
  EXPECT_TRUE(packages("build data test").contains("python3-pytest")) << "make test runs python/tests";
}

TEST(InstallDeps, BenchGetsEveryPeer) {
  const std::set<std::string> bench = packages("build bench");
  for (const char* p : kBenchPeers) EXPECT_TRUE(bench.contains(p)) << p;
  EXPECT_TRUE(packages("bogus").empty()) << "an unknown set lists nothing (and fails)";
}

}  // namespace
}  // namespace trib::config
