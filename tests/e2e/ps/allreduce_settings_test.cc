// Settings are honoured or refused, never silently changed: an allreduce cluster takes the
// linear scaling rule as its default only where the job leaves it out, and the run
// directory's config.yaml says what ran.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

const std::string kAllreduce = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_allreduce.yaml";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

testing::TribRun run(const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> a = {"train", kAllreduce, "--output", out.string(), "--set", "data.train_subset=1024",
                                "--set", "data.test_subset=256", "--set", "training.steps=8", "--set",
                                "training.batch=64", "--set", "training.train_metrics=false"};
  a.insert(a.end(), extra.begin(), extra.end());
  return testing::run_trib(a, std::chrono::seconds(180));
}

TEST(AllreduceSettings, LinearScalingIsTheDefaultAndConfigYamlSaysSo) {
  fs::path out = testing::fresh_path("allreduce", "default");
  testing::TribRun r = run(out, {});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string yaml = read(out / "config.yaml");
  EXPECT_NE(yaml.find("linear_scaling: true"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("global_batch: 128"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("warmup_start_factor: 0.5"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("total_steps:"), std::string::npos) << "cosine's derived length: " << yaml;
  fs::remove_all(out);
}

TEST(AllreduceSettings, AnExplicitLinearScalingFalseIsHonoured) {
  fs::path out = testing::fresh_path("allreduce", "off");
  testing::TribRun r = run(out, {"--set", "schedule.linear_scaling=false"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string yaml = read(out / "config.yaml");
  EXPECT_NE(yaml.find("linear_scaling: false"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("global_batch"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("warmup_start_factor"), std::string::npos) << yaml;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
