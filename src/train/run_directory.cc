#include "trib/train/run_directory.h"

#include <chrono>
#include <ctime>

#include <nlohmann/json.hpp>

#include "trib/config/job_config.h"
#include "trib/core/error.h"

namespace trib::train {

namespace fs = std::filesystem;

void RunDirectory::check_new(const fs::path& path) {
  std::error_code ec;
  bool holds_a_run = false;
  if (fs::is_directory(path, ec))
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec))
      if (!e.path().filename().string().starts_with(kCoordinatorJournal)) holds_a_run = true;
  if (holds_a_run || (fs::exists(path, ec) && !fs::is_directory(path, ec)))
    throw InvalidArgument(fmt::format(
        "output directory '{}' already exists and is not empty: choose another --output, or "
        "pass --resume {} to continue that run",
        path.string(), path.string()));
}

RunDirectory::RunDirectory(fs::path path, bool resuming) : path_(std::move(path)) {
  std::error_code ec;
  if (!resuming) check_new(path_);
  fs::create_directories(path_, ec);
  TRIB_CHECK(!ec, IoError, "cannot create output directory '{}': {}", path_.string(), ec.message());
  metrics_.open(path_ / "metrics.jsonl", std::ios::app);
  TRIB_CHECK(metrics_.good(), IoError, "cannot write '{}'", (path_ / "metrics.jsonl").string());
}

void RunDirectory::write_config(const std::string& yaml) {
  fs::path tmp = path_ / "config.yaml.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << config::redact_secrets(yaml);  // credentials never reach the run directory
    TRIB_CHECK(out.good(), IoError, "cannot write '{}'", tmp.string());
  }
  fs::rename(tmp, path_ / "config.yaml");
}

void RunDirectory::append_metrics(const EvalRow& row) {
  nlohmann::json j = {{"step", row.step},   {"epoch", row.epoch},       {"split", row.split},
                      {"loss", row.loss},   {"accuracy", row.accuracy}, {"time_s", row.time_s}};
  metrics_ << j.dump() << '\n';
  metrics_.flush();
}

void RunDirectory::append_metrics_line(const std::string& json) {
  metrics_ << json << '\n';
  metrics_.flush();
}

fs::path RunDirectory::default_path(const std::string& job_name) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return fs::path("runs") / fmt::format("{}-{}", job_name, stamp);
}

}  // namespace trib::train
