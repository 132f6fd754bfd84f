// Job files from Python: read and check one (load_job, parse_job), and train a single-process
// file job in this process (train_job), as `trib train` would: the same train::train, its
// progress on stdout, its run directory. Local clusters and stream jobs are run by the
// package as a `trib train` child process (tributary/jobs.py): a cluster's launcher starts
// its roles by re-running its own program, which must be trib.
#include <algorithm>
#include <cstdio>

#include <fmt/ranges.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "interrupt_stop.h"
#include "trib/config/job_config.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/train/progress.h"
#include "trib/train/run_directory.h"
#include "trib/train/trainer.h"

namespace trib::python {

namespace {

// Parses what the parser leaves to the run: the layers, the optimizer and the schedule's name.
void check_job(const config::JobConfig& job) {
  config::build_model(job.model);
  make_optimizer(job.optimizer);
  const std::vector<std::string> schedules = schedule_names();
  TRIB_CHECK(std::find(schedules.begin(), schedules.end(), job.schedule.name) != schedules.end(), InvalidArgument,
             "config {}: schedule.name '{}' is not a schedule: expected one of {}", job.source_file, job.schedule.name,
             fmt::join(schedules, ", "));
}

py::dict job_info(const config::JobConfig& job) {
  check_job(job);
  py::dict d;
  d["name"] = job.name;
  d["source_file"] = job.source_file;
  d["cluster"] = job.cluster.enabled;
  d["workers"] = job.cluster.workers;
  d["ps"] = job.cluster.ps;
  d["stream"] = job.data.stream();
  d["data_format"] = job.data.format;
  d["input"] = job.model.input;
  d["classes"] = job.model.classes;
  d["resolved_yaml"] = job.resolved_yaml;
  return d;
}

py::dict summary_dict(const train::RunSummary& s) {
  py::dict d;
  d["accuracy"] = s.accuracy;
  d["loss"] = s.loss;
  d["wall_s"] = s.wall_s;
  d["images_per_s"] = s.images_per_s;
  d["steps"] = s.steps;
  d["epochs"] = s.epochs;
  return d;
}

py::dict train_job(const std::string& path, const std::vector<std::string>& overrides, const std::string& output,
                   bool resume, bool verbose, const py::object& on_step) {
  train::TrainerOptions o;
  o.job = config::load_job_config(path, overrides);
  TRIB_CHECK(!o.job.cluster.enabled && !o.job.data.stream(), InvalidArgument,
             "config {}: train_job runs a single-process file job here; a cluster or stream job runs as `trib train`",
             path);
  check_job(o.job);
  o.output = output;
  o.resume = resume;
  std::FILE* quiet = verbose ? nullptr : std::fopen("/dev/null", "w");
  o.log = verbose ? stdout : quiet;
  o.interactive = verbose && train::Progress::is_terminal(stdout);
  InterruptStop stop;
  o.stop = &stop;
  if (!on_step.is_none()) {
    o.on_step = [&](std::int64_t step, double loss) {
      py::gil_scoped_acquire gil;
      py::dict d;
      d["step"] = step;
      d["loss"] = loss;
      try {
        if (on_step(d).is(py::bool_(false))) stop.request();
      } catch (py::error_already_set& e) {
        if (!stop.take_interrupt(e)) throw;
      }
    };
  }
  train::RunSummary s;
  try {
    py::gil_scoped_release release;
    s = train::train(o);
  } catch (...) {
    if (quiet) std::fclose(quiet);
    throw;
  }
  if (quiet) std::fclose(quiet);
  stop.raise_if_interrupted();
  return summary_dict(s);
}

}  // namespace

void bind_jobs(py::module_& m) {
  m.def(
      "load_job", [](const std::string& path, const std::vector<std::string>& overrides) {
        return job_info(config::load_job_config(path, overrides));
      },
      py::arg("path"), py::arg("overrides") = std::vector<std::string>{},
      "Reads and checks a job file with key.path=value overrides; returns what the package needs of it.");
  m.def(
      "parse_job",
      [](const std::string& text, const std::string& origin, const std::vector<std::string>& overrides) {
        return job_info(config::parse_job_config(text, origin, overrides));
      },
      py::arg("text"), py::arg("origin"), py::arg("overrides") = std::vector<std::string>{},
      "Checks a job given as YAML or JSON text; `origin` names it in errors.");
  m.def(
      "default_run_dir", [](const std::string& name) { return train::RunDirectory::default_path(name).string(); },
      py::arg("name"), "runs/<name>-<YYYYmmdd-HHMMSS>, as `trib train` names a run directory.");
  m.def("train_job", &train_job, py::arg("path"), py::arg("overrides"), py::arg("output"), py::arg("resume"),
        py::arg("verbose"), py::arg("on_step"),
        "Trains a single-process file job in this process; returns the run's summary.");
}

}  // namespace trib::python
