// docs/config.md lists every key the job parser knows, and only those: the parser reports
// each key it asks for (set or not) while it reads jobs that take every branch (every layer
// type, every data format, a static cluster spec), and the doc's tables must name exactly
// that set. A key added to the parser without a line in the doc fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "trib/config/job_config.h"

namespace trib::config {
namespace {

namespace fs = std::filesystem;

// Every layer type (each reads its own keys), and a cluster with a static spec.
const char* kEveryLayerAndASpec = R"(
model:
  input: [1, 8, 8]
  classes: 2
  layers:
    - {type: conv2d, filters: 2}
    - {type: batch_norm}
    - {type: max_pool2d}
    - {type: avg_pool2d}
    - {type: dropout, rate: 0.1}
    - {type: activation, activation: relu}
    - {type: flatten}
    - {type: embedding, vocabulary: 4, dim: 2}
    - {type: dense, units: 2}
data:
  train: {images: a, labels: b}
  test: {images: c, labels: d}
training: {steps: 1}
cluster:
  spec: {coordinator: "127.0.0.1:7000", ps: ["127.0.0.1:7001"], workers: ["127.0.0.1:7002"]}
strategy: {name: ps}
)";

const char* kCsv = R"(
model: {input: [4], classes: 2, layers: [{type: dense, units: 2}]}
data:
  format: csv
  train: {path: a.csv}
  test: {path: b.csv}
)";

const char* kKafka = R"(
model: {input: [4], classes: 2, layers: [{type: dense, units: 2}]}
data:
  format: kafka
  schema: {features: [a]}
training: {steps: 1}
)";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The keys the parser asks for while reading the jobs above and every example.
std::set<std::string> parser_keys() {
  std::set<std::string> keys;
  for (const char* yaml : {kEveryLayerAndASpec, kCsv, kKafka}) parse_job_config(yaml, "test", {}, &keys);
  for (const auto& e : fs::directory_iterator(fs::path(TRIB_SOURCE_DIR) / "examples"))
    if (e.path().extension() == ".yaml" && !e.path().filename().string().starts_with("sweep_"))  // sweeps: docs/sweeps.md
      parse_job_config(read(e.path()), e.path().string(), {}, &keys);
  return keys;
}

// The keys docs/config.md documents: the first cell of each table row, in backquotes.
std::set<std::string> documented_keys(const std::string& doc) {
  std::set<std::string> keys;
  std::regex row(R"(^\| `([^`]+)` \|)");
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) keys.insert(m[1].str());
  }
  return keys;
}

TEST(ConfigDoc, EveryKeyOfTheParserIsDocumentedAndNoOther) {
  const std::set<std::string> parsed = parser_keys();
  const std::set<std::string> documented = documented_keys(read(fs::path(TRIB_SOURCE_DIR) / "docs" / "config.md"));
  ASSERT_GT(parsed.size(), 50u) << "the parser reported its keys";
  std::string undocumented, unknown;
  for (const std::string& k : parsed)
    if (!documented.contains(k)) undocumented += " " + k;
  for (const std::string& k : documented)
    if (!parsed.contains(k)) unknown += " " + k;
  EXPECT_EQ(undocumented, "") << "keys the parser reads that docs/config.md does not list";
  EXPECT_EQ(unknown, "") << "keys docs/config.md lists that the parser does not read (or that no job in this test "
                            "reaches: add one that does)";
}

TEST(ConfigDoc, KeysAreReportedWithoutListIndices) {
  std::set<std::string> keys;
  parse_job_config(kCsv, "test", {}, &keys);
  EXPECT_TRUE(keys.contains("model.layers[].units"));
  EXPECT_TRUE(keys.contains("data.train.path"));
  EXPECT_TRUE(keys.contains("training.clip_norm")) << "asked for though not set";
  EXPECT_FALSE(keys.contains("data.train.images")) << "a csv job has no images";
}

}  // namespace
}  // namespace trib::config
