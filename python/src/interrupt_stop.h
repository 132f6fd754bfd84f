// Ctrl-C while the library trains with the GIL released. Python's own SIGINT handler only
// notes the signal; this StopRequest, asked at every step boundary, takes the GIL for a
// moment (at most every 20 ms) to run the pending handlers (PyErr_CheckSignals). A KeyboardInterrupt (or whatever
// a handler raised) then stops the run at that boundary, cleanly, last checkpoint written,
// and the caller raises it once the loop has returned. A callback may also ask for a stop.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

#include "bindings.h"
#include "trib/train/stop_request.h"

namespace trib::python {

class InterruptStop final : public train::StopRequest {
 public:
  bool stop_at(std::int64_t step) override;
  std::string reason() const override;

  // Stop at the next step boundary (a callback returned False).
  void request() { requested_ = true; }
  // With the GIL held, in a callback or the iterator: if `e` is a KeyboardInterrupt (Ctrl-C
  // landed in Python code the loop called), keep it and stop at the next boundary, returning
  // true; else false, and the caller rethrows `e`.
  bool take_interrupt(py::error_already_set& e);
  // With the GIL held: raises what a signal handler raised, if one stopped the run.
  void raise_if_interrupted();

 private:
  static constexpr std::chrono::milliseconds kCheckEvery{20};
  std::chrono::steady_clock::time_point last_check_{};
  std::atomic<bool> requested_{false};
  std::unique_ptr<py::error_already_set> error_;  // destroyed with the GIL held (pybind11 >= 2.10)
};

}  // namespace trib::python
