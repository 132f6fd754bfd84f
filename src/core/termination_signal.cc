#include "trib/core/termination_signal.h"

#include <signal.h>

#include <csignal>

#include "trib/core/error.h"

namespace trib {

namespace {

// The only state a handler may touch: written by it, read by TerminationSignal::received.
volatile std::sig_atomic_t g_sigterm = 0;  // NOLINT: a signal handler can reach nothing else
struct sigaction g_previous {};            // NOLINT: restored by the one TerminationSignal alive
bool g_installed = false;                  // NOLINT: guards "one at a time"

void on_sigterm(int) { g_sigterm = 1; }

}  // namespace

TerminationSignal::TerminationSignal() {
  TRIB_CHECK(!g_installed, InvalidArgument, "a TerminationSignal is already installed in this process");
  g_sigterm = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, &g_previous);
  g_installed = true;
}

TerminationSignal::~TerminationSignal() {
  ::sigaction(SIGTERM, &g_previous, nullptr);
  g_installed = false;
}

bool TerminationSignal::received() const { return g_sigterm != 0; }

void TerminationSignal::raise_for_test() { g_sigterm = 1; }

}  // namespace trib
