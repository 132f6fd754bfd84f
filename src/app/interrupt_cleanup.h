// A single-process run stopped by Ctrl-C: the training loop does not poll for it, so a watcher thread takes them (sigwait, through stream::StopOnSignal), cleans up
// what the run created (FailedRunCleanup: its directory unless it holds a checkpoint), and
// ends the process with 130, as a shell expects of an interrupted command. SIGTERM is not
// taken here: it asks for a checkpoint at the next step boundary (train/stop_request.h).
#pragma once

#include <string>
#include <thread>

#include "app/failed_run.h"
#include "trib/core/log.h"
#include "stream/stop_signal.h"

namespace trib::app {

class InterruptCleanup {
 public:
  // Construct before any other thread starts: signals are blocked in threads started after.
  InterruptCleanup(const FailedRunCleanup& cleanup, std::string config_file, const Log& log);
  ~InterruptCleanup();  // the run ended on its own: stop watching
  InterruptCleanup(const InterruptCleanup&) = delete;
  InterruptCleanup& operator=(const InterruptCleanup&) = delete;

 private:
  stream::StopOnSignal signal_;
  std::jthread watcher_;
};

}  // namespace trib::app
