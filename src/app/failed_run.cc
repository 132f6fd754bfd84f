#include "app/failed_run.h"

#include <system_error>

#include <fmt/format.h>

#include "trib/core/error.h"
#include "trib/train/trainer.h"

namespace trib::app {

namespace fs = std::filesystem;

FailedRunCleanup::FailedRunCleanup(fs::path run_dir, bool resume)
    : dir_(std::move(run_dir)), resume_(resume), existed_(fs::exists(dir_)) {
  std::error_code ec;
  foreign_ = existed_ && !fs::is_empty(dir_, ec);
}

std::string FailedRunCleanup::after_failure(const std::string& config_file) const {
  std::error_code ec;
  if (resume_ || foreign_ || !fs::exists(dir_, ec)) return "";
  bool has_checkpoint = true;
  try {
    train::check_resumable(dir_);
  } catch (const Error&) {
    has_checkpoint = false;
  }
  if (has_checkpoint)
    return fmt::format("the run directory {} holds a checkpoint: continue the run with `trib train {} --resume {}`",
                       dir_.string(), config_file, dir_.string());
  if (existed_) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) fs::remove_all(e.path(), ec);
  } else {
    fs::remove_all(dir_, ec);
  }
  if (ec) return fmt::format("could not remove the run directory {} of the failed run: {}", dir_.string(), ec.message());
  return fmt::format("removed the run directory {}: it held no checkpoint to resume from", dir_.string());
}

}  // namespace trib::app
