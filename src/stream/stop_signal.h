// Turns Ctrl-C (SIGINT) and SIGTERM into a flag that long-running stream commands (`trib
// broker`, `trib produce`) poll or wait on, with no global handler state: the signals are
// blocked in this thread and in every thread started after it (threads inherit the mask, so
// construct this before starting clients), and a watcher thread takes them with sigwait().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

namespace trib::stream {

class StopOnSignal {
 public:
  // Which signals stop: both, or only SIGINT where SIGTERM means "checkpoint, then stop"
  // (core/termination_signal.h) and is left to its own handler.
  enum class Signals { interrupt_and_terminate, interrupt_only };
  explicit StopOnSignal(Signals which = Signals::interrupt_and_terminate);
  // Stops the watcher and restores the signal mask.
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  const std::atomic<bool>& flag() const { return stopped_; }
  bool stopped() const { return stopped_.load(); }
  // Until a signal arrives, or `timeout`; returns whether one did.
  bool wait_for(std::chrono::milliseconds timeout);

 private:
  void watch();

  sigset_t set_{};
  sigset_t previous_{};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> closing_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread watcher_;
};

}  // namespace trib::stream
