// A run's output directory: config.yaml (the resolved configuration), metrics.jsonl (one
// JSON object per evaluation) and checkpoints/.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "trib/train/progress.h"

namespace trib::train {

class RunDirectory {
 public:
  // A multi-host job's coordinator journals its membership here (cluster/coordinator.h), on
  // its own host; a directory holding only that still counts as new.
  static constexpr const char* kCoordinatorJournal = "coordinator-journal.json";

  // Creates `path`. Unless `resuming`, refuses (InvalidArgument) a directory that exists
  // and is not empty, so that an earlier run is never overwritten.
  RunDirectory(std::filesystem::path path, bool resuming);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path checkpoints() const { return path_ / "checkpoints"; }

  // Writes config.yaml: `yaml` with its credentials redacted (config::redact_secrets).
  void write_config(const std::string& yaml);
  // Appends one line and flushes, so that a crash loses at most the line being written.
  void append_metrics(const EvalRow& row);
  // Appends one JSON object (already serialised, one line) the same way: stream reports.
  void append_metrics_line(const std::string& json);

  // Throws InvalidArgument, as the constructor would, if `path` may not start a new run;
  // creates nothing.
  static void check_new(const std::filesystem::path& path);

  // runs/<name>-<YYYYmmdd-HHMMSS>
  static std::filesystem::path default_path(const std::string& job_name);

 private:
  std::filesystem::path path_;
  std::ofstream metrics_;
};

}  // namespace trib::train
