// _tributary: the compiled half of the tributary package (python/tributary holds the rest).
#include "bindings.h"

PYBIND11_MODULE(_tributary, m) {
  m.doc() = "Tributary's C++ library, as the tributary package uses it (import tributary instead)";
  trib::python::bind_errors(m);
  trib::python::bind_jobs(m);
  trib::python::bind_model(m);
}
