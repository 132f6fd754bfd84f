// SIGTERM as a request to stop cleanly (Kubernetes and Slurm preemption, `kill PID`), which a
// program polls rather than dies of. A signal handler can reach no object, so the one
// process-wide piece is the async-signal-safe flag it sets; everything that decides what
// SIGTERM means (train/stop_request.h, the launcher, the parameter-server role) holds a
// TerminationSignal and asks it. SIGINT (Ctrl-C) is left alone: it still stops at once.
#pragma once

namespace trib {

class TerminationSignal {
 public:
  // Installs the handler; the destructor restores the previous one. One at a time.
  TerminationSignal();
  ~TerminationSignal();
  TerminationSignal(const TerminationSignal&) = delete;
  TerminationSignal& operator=(const TerminationSignal&) = delete;

  // Whether SIGTERM arrived since this was made.
  bool received() const;
  // As if SIGTERM arrived (tests; a supervisor that decides to stop the job).
  void raise_for_test();
};

}  // namespace trib
