#include "stream/stop_signal.h"

#include <pthread.h>

namespace trib::stream {

StopOnSignal::StopOnSignal(Signals which) {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  if (which == Signals::interrupt_and_terminate) sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  watcher_ = std::thread([this] { watch(); });
}

StopOnSignal::~StopOnSignal() {
  closing_.store(true);
  // Wakes the watcher's sigwait(); it sees closing_ and returns without setting the flag.
  pthread_kill(watcher_.native_handle(), SIGINT);
  watcher_.join();
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

void StopOnSignal::watch() {
  int signal = 0;
  while (sigwait(&set_, &signal) != 0) {
  }
  if (closing_.load()) return;
  {
    std::lock_guard lock(mu_);
    stopped_.store(true);
  }
  cv_.notify_all();
}

bool StopOnSignal::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return stopped_.load(); });
}

}  // namespace trib::stream
