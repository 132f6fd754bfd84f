// data.format python: a job whose batches come from the program running it (the Python
// package's Model.fit). No files; only shuffle and prefetch.
#include <gtest/gtest.h>

#include "trib/config/job_config.h"

namespace trib::config {
namespace {

const char* kJob = R"(
model:
  input: [4]
  classes: 2
  layers: [{type: dense, units: 2}]
data: {format: python, shuffle: false, prefetch: 0}
)";

TEST(PythonDataFormat, ParsesWithoutFiles) {
  JobConfig job = parse_job_config(kJob, "py.yaml");
  EXPECT_TRUE(job.data.external());
  EXPECT_FALSE(job.data.stream());
  EXPECT_FALSE(job.data.shuffle);
  EXPECT_EQ(job.data.prefetch, 0);
  EXPECT_TRUE(parse_job_config(kJob, "py.yaml", {"data.shuffle=true"}).data.shuffle);
  // The resolved YAML reads back the same (a run directory's config.yaml).
  EXPECT_TRUE(parse_job_config(job.resolved_yaml, "config.yaml").data.external());
}

TEST(PythonDataFormat, FileKeysAreUnknown) {
  try {
    parse_job_config(kJob, "py.yaml", {"data.train={path: a.csv}"});
    FAIL() << "data.train was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'data.train'"), std::string::npos) << e.what();
  }
}

TEST(PythonDataFormat, IsListedAmongTheFormats) {
  try {
    parse_job_config(kJob, "py.yaml", {"data.format=parquet"});
    FAIL() << "parquet was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected idx, csv, kafka or python"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trib::config
