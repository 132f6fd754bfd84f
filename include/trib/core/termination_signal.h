// SIGTERM as a request to stop cleanly (Kubernetes and Slurm preemption, `kill PID`), which a
// program polls rather than dies of. A signal handler can reach no object, so the one
// process-wide piece is the async-signal-safe flag it sets; everything that decides what
// SIGTERM means (train/stop_request.h, the launcher, the parameter-server role) holds a
// TerminationSignal and asks it. SIGINT (Ctrl-C) is left alone: it still stops at once.
#pragma once

#include <memory>

namespace trib {

class TerminationSignal {
 public:
  // Installs the handler and blocks SIGTERM in this thread and every thread started after it
  // (construct it before starting threads); a watcher thread takes the signal. The destructor
  // restores the previous handler and mask. One at a time.
  TerminationSignal();
  ~TerminationSignal();
  TerminationSignal(const TerminationSignal&) = delete;
  TerminationSignal& operator=(const TerminationSignal&) = delete;

  // Whether SIGTERM arrived since this was made.
  bool received() const;
  // As if SIGTERM arrived (tests; a supervisor that decides to stop the job).
  void raise_for_test();

 private:
  struct Watcher;  // the thread that takes SIGTERM (termination_signal.cc says why)
  std::unique_ptr<Watcher> watcher_;
};

}  // namespace trib
