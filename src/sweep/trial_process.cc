#include "trial_process.h"

#include "trib/core/error.h"

namespace trib::sweep {

namespace fs = std::filesystem;

bool has_checkpoint(const fs::path& run_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints", ec))
    if (e.path().filename().string().starts_with("ckpt-") && fs::exists(e.path() / "manifest.json")) return true;
  return false;
}

std::vector<std::string> trial_arguments(const TrialLaunch& l) {
  std::vector<std::string> argv = {l.executable, "train", l.job};
  if (has_checkpoint(l.run_dir)) {
    argv.insert(argv.end(), {"--resume", l.run_dir.string()});
  } else {
    std::error_code ec;
    fs::remove_all(l.run_dir, ec);  // a start cut short before its first checkpoint: begin again
    argv.insert(argv.end(), {"--output", l.run_dir.string()});
  }
  auto set = [&](const std::string& assignment) { argv.insert(argv.end(), {"--set", assignment}); };
  for (const auto& [key, value] : l.params) set(key + "=" + to_yaml(value));
  if (l.target > 0) set("training.steps=" + std::to_string(l.target));
  for (const std::string& e : l.extra) set(e);
  return argv;
}

TrialProcess::TrialProcess(const TrialLaunch& launch) : log_(launch.log_file, std::ios::app) {
  TRIB_CHECK(log_.good(), IoError, "cannot write '{}'", launch.log_file.string());
  std::vector<std::string> argv = trial_arguments(launch);
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  log_ << "$ " << command << '\n';
  log_.flush();
  child_ = std::make_unique<cluster::ChildProcess>(launch.run_dir.filename().string(), argv,
                                                   std::map<std::string, std::string>{});
}

bool TrialProcess::poll() {
  const bool exited = child_->poll_exit().has_value();  // before the last read: no line is missed
  for (const std::string& line : child_->read_lines()) {
    log_ << line << '\n';
    if (line.empty()) continue;
    last_line_ = line;
    if (line.find("error") != std::string::npos) last_error_ = line;
  }
  log_.flush();
  if (exited && child_->output_closed()) {
    if (last_error_.empty()) last_error_ = last_line_;
    return true;
  }
  return false;
}

}  // namespace trib::sweep
