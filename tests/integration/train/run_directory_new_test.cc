// Which output directories may start a new run: a multi-host job's coordinator may have
// written its journal there already (on the chief's host too), and that alone is no run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trib/core/error.h"
#include "trib/train/run_directory.h"

namespace trib::train {
namespace {

namespace fs = std::filesystem;

TEST(RunDirectoryNew, ADirectoryHoldingOnlyTheCoordinatorsJournalIsNewAnyOtherFileIsNot) {
  fs::path dir = fs::temp_directory_path() / ("trib_run_new_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_NO_THROW(RunDirectory::check_new(dir)) << "empty";
  std::ofstream(dir / RunDirectory::kCoordinatorJournal) << "{}";
  std::ofstream(dir / (std::string(RunDirectory::kCoordinatorJournal) + ".tmp")) << "{}";
  EXPECT_NO_THROW(RunDirectory::check_new(dir)) << "only the coordinator's journal";
  std::ofstream(dir / "metrics.jsonl") << "{}\n";
  EXPECT_THROW(RunDirectory::check_new(dir), InvalidArgument) << "an earlier run's metrics";
  fs::remove_all(dir);
  std::ofstream(dir) << "not a directory";
  EXPECT_THROW(RunDirectory::check_new(dir), InvalidArgument) << "a file";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trib::train
