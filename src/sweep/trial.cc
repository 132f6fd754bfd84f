#include "trial.h"

#include "trib/core/error.h"

namespace trib::sweep {

namespace fs = std::filesystem;

TrialLog::TrialLog(const fs::path& file) : out_(file, std::ios::app) {
  TRIB_CHECK(out_.good(), IoError, "cannot write '{}'", file.string());
}

void TrialLog::command(const std::string& line) {
  out_ << "$ " << line << '\n';
  out_.flush();
}

void TrialLog::lines(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    out_ << line << '\n';
    if (line.empty()) continue;
    last_line_ = line;
    if (line.find("error") != std::string::npos) last_error_ = line;
  }
  if (!lines.empty()) out_.flush();
}

const std::string& TrialLog::last_error() {
  if (last_error_.empty()) last_error_ = last_line_;
  return last_error_;
}

bool has_checkpoint(const fs::path& run_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints", ec))
    if (e.path().filename().string().starts_with("ckpt-") && fs::exists(e.path() / "manifest.json")) return true;
  return false;
}

std::vector<std::string> trial_overrides(const TrialLaunch& l) {
  std::vector<std::string> out;
  for (const auto& [key, value] : l.params) out.push_back(key + "=" + to_yaml(value));
  if (l.target > 0) out.push_back("training.steps=" + std::to_string(l.target));
  out.insert(out.end(), l.extra.begin(), l.extra.end());
  return out;
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
  for (const std::string& o : trial_overrides(l)) argv.insert(argv.end(), {"--set", o});
  return argv;
}

}  // namespace trib::sweep
