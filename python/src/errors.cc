// Tributary's errors (trib/core/error.h) as Python exceptions with the same one-line message:
// tributary.Error, and beneath it InvalidArgument (also a ValueError), ShapeError and NotFound
// (also a LookupError). Any other std::exception keeps pybind11's own translation.
#include "bindings.h"
#include "trib/core/error.h"

namespace trib::python {

namespace {

// Created once when the module loads; the module object keeps them alive.
PyObject* g_error = nullptr;
PyObject* g_invalid = nullptr;
PyObject* g_shape = nullptr;
PyObject* g_not_found = nullptr;

PyObject* new_exception(py::module_& m, const char* name, std::initializer_list<PyObject*> bases, const char* doc) {
  py::tuple t(bases.size());
  std::size_t i = 0;
  for (PyObject* b : bases) t[i++] = py::reinterpret_borrow<py::object>(b);
  std::string qualified = std::string("tributary.") + name;
  PyObject* e = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, t.ptr(), nullptr);
  if (e == nullptr) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(e));
  return e;
}

}  // namespace

void bind_errors(py::module_& m) {
  g_error = new_exception(m, "Error", {PyExc_RuntimeError}, "A Tributary error; the message names what is wrong.");
  g_invalid = new_exception(m, "InvalidArgument", {g_error, PyExc_ValueError},
                            "A bad argument, option, key, dtype or shape.");
  g_shape = new_exception(m, "ShapeError", {g_invalid}, "Shapes or dtypes that do not fit together.");
  g_not_found = new_exception(m, "NotFound", {g_error, PyExc_LookupError}, "A file, checkpoint or key that is missing.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ShapeError& e) {
      PyErr_SetString(g_shape, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(g_invalid, e.what());
    } catch (const NotFound& e) {
      PyErr_SetString(g_not_found, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace trib::python
