#include "app/interrupt_cleanup.h"

#include <cstdio>
#include <cstdlib>

#include <stdio.h>  // flockfile

namespace trib::app {

InterruptCleanup::InterruptCleanup(const FailedRunCleanup& cleanup, std::string config_file, const Log& log)
    : signal_(stream::StopOnSignal::Signals::interrupt_only),
      watcher_([this, &cleanup, config = std::move(config_file), log](std::stop_token stop) {
        while (!stop.stop_requested()) {
          if (!signal_.wait_for(std::chrono::milliseconds(100))) continue;
          // Held until the end: the training thread, still running, draws no more progress.
          ::flockfile(stdout);
          std::fflush(stdout);
          fmt::print(stderr, "\ntrib: interrupted; stopping\n");
          if (std::string note = cleanup.after_failure(config); !note.empty()) log.info("{}", note);
          std::fflush(stderr);
          std::_Exit(130);
        }
      }) {}

InterruptCleanup::~InterruptCleanup() {
  watcher_.request_stop();
  watcher_.join();
}

}  // namespace trib::app
