#include "trial_process.h"

#include "trib/core/error.h"

namespace trib::sweep {

TrialProcess::TrialProcess(const TrialLaunch& launch) : log_(launch.log_file) {
  std::vector<std::string> argv = trial_arguments(launch);
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  log_.command(command);
  child_ = std::make_unique<cluster::ChildProcess>(launch.run_dir.filename().string(), argv,
                                                   std::map<std::string, std::string>{});
}

bool TrialProcess::poll() {
  const bool exited = child_->poll_exit().has_value();  // before the last read: no line is missed
  log_.lines(child_->read_lines());
  if (exited && child_->output_closed()) {
    last_error_ = log_.last_error();
    return true;
  }
  return false;
}

void TrialProcess::go_on(std::int64_t) {
  throw InvalidArgument("a `trib train` trial exits at the end of its segment: it cannot go on");
}

}  // namespace trib::sweep
