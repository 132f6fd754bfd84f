// The C++ side of tributary.Model: a job's model (its model section, seed and threads), its
// variables, and the graphs that run it. Training goes through the library's one training
// loop (trib/train/source_training.h) over numpy arrays (a DatasetBatchSource over them) or
// a Python iterator (iterator_source.h); prediction and evaluation through inference graphs,
// one per batch size, built once. Every method that runs the engine releases the GIL.
#pragma once

#include <functional>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pybind11/numpy.h>

#include "bindings.h"
#include "interrupt_stop.h"
#include "trib/config/job_config.h"
#include "trib/engine/context.h"
#include "trib/train/batch_source.h"
#include "trib/train/model_graph.h"
#include "trib/train/source_training.h"

namespace trib::python {

// How one fit runs, besides its job and its data.
struct FitArgs {
  // key.path=value settings over the model's job (training, optimizer, schedule...; a value
  // may be a whole YAML or JSON mapping). The fit's job is the model's own, single process,
  // with data.format python.
  std::vector<std::string> overrides;
  std::string run_dir;
  bool resume = false;
  bool verbose = false;
  py::object on_step;    // callable(dict) -> False to stop, or None
  py::object on_report;  // callable(step, epoch) or None: the model's variables are current
};

class ModelCore {
 public:
  // `job_text` (YAML or JSON) gives the model, training.seed and threads; `origin` names it
  // in errors. Variables start at their seeded initial values (trainer's initialisation).
  ModelCore(const std::string& job_text, const std::string& origin);
  // The model of a run directory (its config.yaml) with the variables of its newest valid
  // checkpoint; `path` may also be a ckpt-<step> directory.
  static std::unique_ptr<ModelCore> load(const std::string& path);

  const config::JobConfig& job() const { return job_; }
  std::int64_t step() const { return step_; }
  std::vector<std::string> parameter_names(bool trainable_only);

  py::dict variables();  // name -> numpy array over the variable's memory
  void set_variable(const std::string& name, const py::handle& value);

  // Logits [N, classes] of features x, run `batch` rows at a time.
  py::array predict(const py::handle& x, std::int64_t batch);
  // {"loss", "accuracy", "examples"} over (x, y), in inference mode.
  py::dict evaluate(const py::handle& x, const py::handle& y, std::int64_t batch);

  // Trains on arrays (x, y) or on an iterator of (x, y) batches; returns the run's summary.
  py::dict fit_arrays(const py::handle& x, const py::handle& y, const FitArgs& args);
  py::dict fit_iterator(const py::iterator& it, std::int64_t steps, std::int64_t steps_per_epoch, const FitArgs& args);

 private:
  train::ModelGraph& graph_for(std::int64_t batch);  // with mu_ held
  // Runs the model over `in` in slices of `batch` rows (the GIL released, mu_ held), handing
  // each slice's first row, row count and result to `each`; `labels` gives a slice's labels.
  void run_batches(const Tensor& in, std::int64_t batch, const std::function<Tensor(std::int64_t, std::int64_t)>& labels,
                   const std::function<void(std::int64_t, std::int64_t, const train::StepResult&)>& each);
  void ensure_variables();                           // with mu_ held
  py::dict fit(train::BatchSource& source, const config::JobConfig& job, train::SourceTrainingOptions plan,
               const FitArgs& args, InterruptStop& stop);
  config::JobConfig fit_job(const FitArgs& args) const;

  config::JobConfig job_;
  std::unique_ptr<EngineContext> engine_;
  train::ModelSpec spec_;
  std::mutex mu_;  // variables_ and graphs_
  VariableStore variables_;
  std::int64_t step_ = 0;  // the step the variables come from
  std::map<std::int64_t, std::unique_ptr<train::ModelGraph>> graphs_;
};

}  // namespace trib::python
