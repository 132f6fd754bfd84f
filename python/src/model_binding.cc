// tributary._tributary.ModelCore: the compiled half of tributary.Model (tributary/model.py).
#include <pybind11/stl.h>

#include "bindings.h"
#include "model_core.h"

namespace trib::python {

void bind_model(py::module_& m) {
  py::class_<ModelCore>(m, "ModelCore")
      .def(py::init<const std::string&, const std::string&>(), py::arg("job_text"), py::arg("origin"))
      .def_static("load", &ModelCore::load, py::arg("path"))
      .def_property_readonly("step", &ModelCore::step)
      .def_property_readonly("config_yaml", [](const ModelCore& c) { return c.job().resolved_yaml; })
      .def("parameter_names", &ModelCore::parameter_names, py::arg("trainable_only") = false)
      .def("variables", &ModelCore::variables)
      .def("set_variable", &ModelCore::set_variable, py::arg("name"), py::arg("value"))
      .def("predict", &ModelCore::predict, py::arg("x"), py::arg("batch"))
      .def("evaluate", &ModelCore::evaluate, py::arg("x"), py::arg("y"), py::arg("batch"))
      .def(
          "fit_arrays",
          [](ModelCore& c, const py::handle& x, const py::handle& y, const std::vector<std::string>& overrides,
             const std::string& run_dir, bool resume, bool verbose, py::object on_step, py::object on_report) {
            return c.fit_arrays(x, y, FitArgs{overrides, run_dir, resume, verbose, on_step, on_report});
          },
          py::arg("x"), py::arg("y"), py::arg("overrides"), py::arg("run_dir"), py::arg("resume"), py::arg("verbose"),
          py::arg("on_step"), py::arg("on_report"))
      .def(
          "fit_iterator",
          [](ModelCore& c, py::iterator it, std::int64_t steps, std::int64_t steps_per_epoch,
             const std::vector<std::string>& overrides, const std::string& run_dir, bool verbose,
             py::object on_step, py::object on_report) {
            return c.fit_iterator(it, steps, steps_per_epoch,
                                  FitArgs{overrides, run_dir, false, verbose, on_step, on_report});
          },
          py::arg("iterator"), py::arg("steps"), py::arg("steps_per_epoch"), py::arg("overrides"), py::arg("run_dir"),
          py::arg("verbose"), py::arg("on_step"), py::arg("on_report"));
}

}  // namespace trib::python
