#include "trib/core/termination_signal.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "trib/core/error.h"

namespace trib {

namespace {

// The only state a handler may touch: written by it (or the watcher), read by received().
volatile std::sig_atomic_t g_sigterm = 0;  // NOLINT: a signal handler can reach nothing else
struct sigaction g_previous {};            // NOLINT: restored by the one TerminationSignal alive
bool g_installed = false;                  // NOLINT: guards "one at a time"

void on_sigterm(int) { g_sigterm = 1; }

}  // namespace

// SIGTERM is blocked in the constructing thread, so in every thread started after it, and one
// watcher thread takes it with sigwait(). A signal is then never delivered into a compute
// thread: on the development VM a SIGTERM handled inside a running oneDNN kernel was followed
// by heap corruption (`corrupted size vs. prev_size`) about one run in ten. The handler stays
// as the fallback for threads started before this object (they are idle ones).
struct TerminationSignal::Watcher {
  sigset_t set{};
  sigset_t previous{};
  std::atomic<bool> closing{false};
  std::thread thread;
};

TerminationSignal::TerminationSignal() : watcher_(std::make_unique<Watcher>()) {
  TRIB_CHECK(!g_installed, InvalidArgument, "a TerminationSignal is already installed in this process");
  g_sigterm = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, &g_previous);
  g_installed = true;
  sigemptyset(&watcher_->set);
  sigaddset(&watcher_->set, SIGTERM);
  // The watcher starts with every signal blocked (it takes only SIGTERM, by sigwait: SIGINT
  // and the rest must go to the threads that handle them); then this thread and those it
  // starts later keep only SIGTERM blocked.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &watcher_->previous);
  Watcher* w = watcher_.get();
  w->thread = std::thread([w] {
    for (;;) {
      int signal = 0;
      if (sigwait(&w->set, &signal) != 0) continue;
      if (w->closing.load()) return;
      g_sigterm = 1;
    }
  });
  sigset_t keep = watcher_->previous;
  sigaddset(&keep, SIGTERM);
  pthread_sigmask(SIG_SETMASK, &keep, nullptr);
}

TerminationSignal::~TerminationSignal() {
  watcher_->closing.store(true);
  pthread_kill(watcher_->thread.native_handle(), SIGTERM);  // wakes its sigwait()
  watcher_->thread.join();
  pthread_sigmask(SIG_SETMASK, &watcher_->previous, nullptr);
  ::sigaction(SIGTERM, &g_previous, nullptr);
  g_installed = false;
}

bool TerminationSignal::received() const { return g_sigterm != 0; }

void TerminationSignal::raise_for_test() { g_sigterm = 1; }

}  // namespace trib
