// A run that fails must leave nothing that refuses its rerun with the same --output. A new
// run's directory that holds no checkpoint (only config.yaml and metrics.jsonl, or nothing)
// is removed; one that holds a checkpoint is kept, and the user is told to --resume it.
#pragma once

#include <filesystem>
#include <string>

namespace trib::app {

class FailedRunCleanup {
 public:
  // Notes whether `run_dir` exists before the run starts. A resumed run's directory is
  // never touched.
  FailedRunCleanup(std::filesystem::path run_dir, bool resume);

  // After the run failed (its processes are gone): removes what it created when no
  // checkpoint is there. Returns a line for the user: what was removed, or how to resume;
  // "" when there was nothing to do.
  std::string after_failure(const std::string& config_file) const;

 private:
  std::filesystem::path dir_;
  bool resume_;
  bool existed_;  // an empty directory the user made: emptied, not removed
  bool foreign_;  // it was not empty: another run's (the run refused it), never touched
};

}  // namespace trib::app
