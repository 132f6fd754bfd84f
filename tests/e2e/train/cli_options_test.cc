// The `trib` command line itself: where --set may go, what --help and --version print.
#include <gtest/gtest.h>

#include <regex>

#include "e2e/trib_process.h"

namespace trib {
namespace {

const std::string kMlp = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml";

testing::TribRun run(const std::vector<std::string>& args) { return testing::run_trib(args, std::chrono::seconds(60)); }

// A misspelt key is refused naming the key: proof that the job file was read and the
// override applied to it, whichever side of the job file --set stood.
void expect_override_applied(const std::vector<std::string>& args) {
  auto r = run(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown key 'training.epohcs'; did you mean 'training.epochs'"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("is required"), std::string::npos) << r.output;
}

TEST(CliOptions, SetGoesBeforeOrAfterTheJobFileInEveryCommand) {
  const std::string typo = "training.epohcs=1";
  expect_override_applied({"train", "--set", typo, kMlp});
  expect_override_applied({"train", kMlp, "--set", typo});
  expect_override_applied({"train", "--set=" + typo, kMlp, "--output", "/nonexistent/run"});
  expect_override_applied({"eval", "--set", typo, kMlp, "--checkpoint", "/nonexistent/run"});
  expect_override_applied({"eval", "--set", "threads.intra=1", "--set", typo, kMlp, "--checkpoint", "/x"});
  expect_override_applied({"eval", kMlp, "--set", typo, "--checkpoint", "/nonexistent/run"});
  expect_override_applied({"coordinator", "--set", typo, kMlp, "--secret-file", "/nonexistent/secret"});
  expect_override_applied({"coordinator", kMlp, "--secret-file", "/nonexistent/secret", "--set", typo});
}

TEST(CliOptions, HelpShowsDefaults) {
  auto produce = run({"produce", "--help"});
  EXPECT_EQ(produce.exit_code, 0) << produce.output;
  EXPECT_NE(produce.output.find("--rate FLOAT:NONNEGATIVE=1000"), std::string::npos) << produce.output;
  EXPECT_NE(produce.output.find("--topic TEXT=transactions"), std::string::npos) << produce.output;
  auto worker = run({"worker", "--help"});
  EXPECT_EQ(worker.exit_code, 0) << worker.output;
  EXPECT_NE(worker.output.find("--timeout INT:POSITIVE=60"), std::string::npos) << worker.output;
  auto broker = run({"broker", "--help"});
  EXPECT_NE(broker.output.find("=4"), std::string::npos) << "partitions per topic\n" << broker.output;
}

// `trib plan` with given compute still measures when each gradient is ready (the allreduce's
// timeline), prints it, and refuses a goodput that is not a share of the link.
TEST(CliOptions, PlanPrintsWhenGradientsAreReadyAndRefusesABadGoodput) {
  auto r = run({"plan", kMlp, "--hosts", "4", "--link", "1gbit", "--step-ms", "64=2.5", "--calibrate-seconds", "0.2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The MLP's variables in order (kernel, bias per layer), each with its bytes and a ready time.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\nplan gradients batch=64 bytes_ready_at=(\d+:[01]\.\d\d,){5}\d+:[01]\.\d\d\n)")))
      << r.output;
  EXPECT_NE(r.output.find("plan workers=2 strategy=allreduce compression=none ps=0 batch=64 step_ms="), std::string::npos)
      << r.output;
  auto bad = run({"plan", kMlp, "--step-ms", "64=2.5", "--goodput", "1.5"});
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("--goodput 1.5: expected more than 0, at most 1"), std::string::npos) << bad.output;
}

TEST(CliOptions, VersionNamesTheCommitAndTheLibraries) {
  auto r = run({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The commit is git's description at configure time, or "unknown" outside a checkout.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(^trib [0-9]+\.[0-9]+(\.[0-9]+)? \(commit [^)\s]+\)\n)")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\noneDNN [0-9]+\.[0-9]+\.[0-9]+ \(commit [^)]+\)\n)")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\nlibrdkafka [0-9]+\.[0-9]+\.[0-9]+)"))) << r.output;
}

}  // namespace
}  // namespace trib
