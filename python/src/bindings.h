// The pieces of the _tributary module, one function per file that adds its part.
#pragma once

#include <pybind11/pybind11.h>

namespace trib::python {

namespace py = pybind11;

void bind_errors(py::module_& m);  // errors.cc: Tributary's errors as Python exceptions
void bind_jobs(py::module_& m);    // jobs.cc: checking and training job files
void bind_model(py::module_& m);   // model_binding.cc: models built in Python, fit, predict, load

}  // namespace trib::python
