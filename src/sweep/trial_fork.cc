#include "trial_fork.h"

#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cstdio>
#include <thread>

#include "trib/config/job_config.h"
#include "trib/core/error.h"
#include "trib/train/trainer.h"

namespace trib::sweep {

namespace fs = std::filesystem;

namespace {

// The trial's side of "stop": asked at every step boundary (train/stop_request.h).
class ControlStop final : public train::StopRequest {
 public:
  explicit ControlStop(ControlChannel& control) : control_(control) {}
  bool stop_at(std::int64_t) override {
    for (const std::string& line : control_.poll_lines())
      if (line == "stop" || line == "end") stopped_ = true;
    return stopped_;
  }
  std::string reason() const override { return "the sweep's request (time budget or SIGTERM)"; }
  bool stopped() const { return stopped_; }

 private:
  ControlChannel& control_;
  bool stopped_ = false;
};

// The child: segment after segment, until the sweep says no more. Returns the exit status.
// A promoted trial trains on inside the same train::train (TrainerOptions::next_job): its
// model, optimizer state, data position and oneDNN primitives are kept, and the checkpoint it
// has just written at the rung (for --resume after a crash) is not read back.
int run_segments(TrialLaunch launch, const std::shared_ptr<const train::Datasets>& data, ControlChannel& control) {
  ControlStop stop(control);
  bool more = false;  // the sweep said "go" (the trainer may not have taken it in process)
  auto ask = [&](std::int64_t) -> std::optional<config::JobConfig> {
    more = false;
    std::fflush(stdout);
    if (stop.stopped() || !control.send("paused")) return std::nullopt;
    std::optional<std::string> line = control.wait_line();
    if (!line || !line->starts_with("go ")) return std::nullopt;  // "end", "stop", or the sweep is gone
    launch.target = std::stoll(line->substr(3));
    more = true;
    return config::load_job_config(launch.job, trial_overrides(launch));
  };
  for (;;) {
    train::TrainerOptions o;
    o.job = config::load_job_config(launch.job, trial_overrides(launch));
    o.output = launch.run_dir;
    o.resume = has_checkpoint(launch.run_dir);
    o.log = stdout;
    o.stop = &stop;
    o.datasets = data;
    o.next_job = ask;
    train::train(o);
    std::fflush(stdout);
    // The trainer ended without taking the sweep's "go" (a schedule whose length follows
    // training.steps): the next segment resumes from the checkpoint, as `trib train --resume`.
    if (!more || stop.stopped()) return 0;
  }
}

}  // namespace

ForkedTrial::ForkedTrial(const TrialLaunch& launch, std::shared_ptr<const train::Datasets> data)
    : launch_(launch), log_(launch.log_file) {
  std::string command;
  for (const std::string& a : trial_arguments(launch_)) command += (command.empty() ? "" : " ") + a;
  log_.command(command + "    (forked from the sweep, its data loaded)");
  auto [mine, theirs] = ControlChannel::socket_pair();
  control_ = std::make_unique<ControlChannel>(mine);
  const int child_end = theirs;
  try {
    child_ = std::make_unique<cluster::ChildProcess>(launch_.run_dir.filename().string(), [&]() {
      // Only the control socket and stdout/stderr stay open: the sweep's other descriptors
      // (its end of this socket, other trials' sockets and pipes, its logs) are not this
      // trial's to hold.
      const int fd = ::dup2(child_end, 3);
      ::close_range(4, ~0U, 0);
      ControlChannel control(fd);
      return run_segments(launch_, data, control);
    });
  } catch (...) {
    ::close(child_end);
    throw;
  }
  ::close(child_end);
}

ForkedTrial::~ForkedTrial() { finish(); }

void ForkedTrial::finish() {
  if (child_->exited()) return;
  if (paused_) {
    control_->send("end");
    // It exits at once: wait for it briefly, so that it ends rather than being killed.
    for (int i = 0; i < 400 && !child_->poll_exit(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!child_->exited()) child_->signal(SIGKILL);
  while (!child_->poll_exit()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  log_.lines(child_->read_lines());
}

bool ForkedTrial::poll() {
  const bool exited = child_->poll_exit().has_value();  // before the last read: no line is missed
  bool now_paused = false;
  for (const std::string& line : control_->poll_lines()) now_paused |= line == "paused";
  log_.lines(child_->read_lines());  // after the control line: what it wrote before it is here
  if (now_paused) {
    paused_ = true;
    return true;
  }
  if (exited && child_->output_closed()) {
    last_error_ = log_.last_error();
    return true;
  }
  return false;
}

void ForkedTrial::go_on(std::int64_t target) {
  TRIB_CHECK(paused_, InvalidArgument, "{}: go_on while it is not paused", launch_.run_dir.filename().string());
  launch_.target = target;
  log_.command(fmt::format("(the same process goes on to training.steps={})", target));
  paused_ = false;
  control_->send(fmt::format("go {}", target));
}

}  // namespace trib::sweep
