// The run directory's config.yaml never holds Kafka credentials in clear: a run directory is
// shared far more freely than the job's secrets should be.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trib/train/run_directory.h"

namespace trib::train {
namespace {

TEST(RunDirectorySecrets, ConfigYamlHasTheCredentialsRedacted) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("trib_run_secrets_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    RunDirectory run(dir, false);
    run.write_config("name: t\ndata:\n  kafka:\n    properties:\n      sasl.username: u\n      sasl.password: hunter2\n");
  }
  std::ifstream in(dir / "config.yaml");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().find("hunter2"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("sasl.password: <redacted>"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("sasl.username: u"), std::string::npos) << text.str();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trib::train
