#include "interrupt_stop.h"

namespace trib::python {

bool InterruptStop::stop_at(std::int64_t) {
  if (error_) return true;
  if (requested_) return true;
  // Taking the GIL costs a hand-over from any busy Python thread (up to its 5 ms switch
  // interval), so signals are looked at every kCheckEvery, not at every short step.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < kCheckEvery) return false;
  last_check_ = now;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) {
    error_ = std::make_unique<py::error_already_set>();  // takes the pending exception
    return true;
  }
  return false;
}

bool InterruptStop::take_interrupt(py::error_already_set& e) {
  if (!e.matches(PyExc_KeyboardInterrupt)) return false;
  if (!error_) error_ = std::make_unique<py::error_already_set>(e);
  return true;
}

std::string InterruptStop::reason() const {
  return error_ ? "interrupted (KeyboardInterrupt)" : "stopped by a callback";
}

void InterruptStop::raise_if_interrupted() {
  if (!error_) return;
  std::unique_ptr<py::error_already_set> e = std::move(error_);
  e->restore();
  throw py::error_already_set();
}

}  // namespace trib::python
