#include "model_core.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "arrays.h"
#include "interrupt_stop.h"
#include "iterator_source.h"
#include "train/training_state.h"
#include "trib/data/in_memory_dataset.h"
#include "trib/train/dataset_batch_source.h"
#include "trib/train/progress.h"

#include <yaml-cpp/yaml.h>

namespace trib::python {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxGraphs = 32;

// Where a quiet run's log lines go.
struct NullFile {
  std::FILE* f = std::fopen("/dev/null", "w");
  NullFile() { TRIB_CHECK(f != nullptr, IoError, "cannot open /dev/null for a quiet log"); }
  ~NullFile() { std::fclose(f); }
  NullFile(const NullFile&) = delete;
  NullFile& operator=(const NullFile&) = delete;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  TRIB_CHECK(in.good(), NotFound, "cannot read {}", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A run directory's config.yaml, found from the run directory, its checkpoints root or one
// of its ckpt-<step> directories.
fs::path find_run_config(const fs::path& path) {
  TRIB_CHECK(fs::exists(path), NotFound, "Model.load: {} does not exist", path.string());
  for (const fs::path& dir : {path, path.parent_path(), path.parent_path().parent_path()})
    if (fs::is_regular_file(dir / "config.yaml")) return dir / "config.yaml";
  throw NotFound(fmt::format("Model.load: {} is not a run directory (no config.yaml in it or above its checkpoint)",
                             path.string()));
}

}  // namespace

ModelCore::ModelCore(const std::string& job_text, const std::string& origin)
    : job_(config::parse_job_config(job_text, origin)),
      engine_(std::make_unique<EngineContext>(EngineOptions{job_.threads.intra, job_.threads.inter})),
      spec_{config::build_model(job_.model), Shape(job_.model.input), job_.model.classes, job_.training.seed} {
  std::lock_guard lock(mu_);
  graph_for(1);  // builds the model once: a model whose shapes do not fit fails here
}

std::unique_ptr<ModelCore> ModelCore::load(const std::string& path) {
  const fs::path config = find_run_config(path);
  auto core = std::make_unique<ModelCore>(read_text(config), config.string());
  NullFile quiet;
  Checkpoint ckpt = train::load_checkpoint_for_eval(path, quiet.f);
  std::lock_guard lock(core->mu_);
  train::restore_variables(ckpt, core->graph_for(1).parameters(), core->variables_);
  core->step_ = ckpt.step();
  return core;
}

train::ModelGraph& ModelCore::graph_for(std::int64_t batch) {
  // One graph per batch size seen; callers with ever-changing sizes (a server's requests)
  // would otherwise grow the cache without bound.
  if (graphs_.size() >= kMaxGraphs && !graphs_.contains(batch)) graphs_.clear();
  std::unique_ptr<train::ModelGraph>& g = graphs_[batch];
  if (!g) g = std::make_unique<train::ModelGraph>(spec_, batch, false, *engine_);
  return *g;
}

void ModelCore::ensure_variables() {
  if (variables_.size() == 0) train::initialize_parameters(graph_for(1).parameters(), spec_.seed, variables_);
}

std::vector<std::string> ModelCore::parameter_names(bool trainable_only) {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const nn::Parameter& p : graph_for(1).parameters())
    if (!trainable_only || p.trainable) out.push_back(p.name);
  return out;
}

py::dict ModelCore::variables() {
  std::lock_guard lock(mu_);
  ensure_variables();
  py::dict out;
  for (const std::string& name : variables_.names()) out[py::str(name)] = to_numpy(variables_.get(name));
  return out;
}

void ModelCore::set_variable(const std::string& name, const py::handle& value) {
  Tensor v = tensor_from_numpy(value, "variable '" + name + "'");
  std::lock_guard lock(mu_);
  ensure_variables();
  TRIB_CHECK(variables_.contains(name), NotFound, "the model has no variable '{}' (it has: {})", name,
             fmt::join(variables_.names(), ", "));
  Tensor& t = variables_.get(name);
  TRIB_CHECK(t.shape() == v.shape(), ShapeError, "variable '{}' is {} but the new value is {}", name,
             t.spec_string(), v.spec_string());
  t.copy_from(v);  // in place: arrays returned by variables() see the new value
}

py::array ModelCore::predict(const py::handle& x, std::int64_t batch) {
  TRIB_CHECK(batch > 0, InvalidArgument, "batch_size must be positive, got {}", batch);
  Tensor in = features_from_numpy(x, spec_.input, "x");
  const std::int64_t n = in.shape()[0], classes = spec_.classes;
  Tensor out = Tensor::empty(DType::f32, Shape{n, classes});
  run_batches(
      in, batch, [](std::int64_t, std::int64_t rows) { return Tensor::zeros(DType::i32, Shape{rows}); },
      [&](std::int64_t begin, std::int64_t, const train::StepResult& r) {
        std::memcpy(out.data<float>() + begin * classes, r.logits.data<float>(), r.logits.nbytes());
      });
  return to_numpy(out);
}

py::dict ModelCore::evaluate(const py::handle& x, const py::handle& y, std::int64_t batch) {
  TRIB_CHECK(batch > 0, InvalidArgument, "batch_size must be positive, got {}", batch);
  Tensor in = features_from_numpy(x, spec_.input, "x");
  const std::int64_t n = in.shape()[0];
  Tensor labels = labels_from_numpy(y, n, spec_.classes, "y");
  double loss_sum = 0;
  std::int64_t correct = 0;
  run_batches(
      in, batch, [&](std::int64_t begin, std::int64_t rows) { return labels.view(begin, Shape{rows}); },
      [&](std::int64_t, std::int64_t rows, const train::StepResult& r) {
        loss_sum += r.loss * double(rows);
        correct += r.correct;
      });
  py::dict out;
  out["loss"] = loss_sum / double(n);
  out["accuracy"] = double(correct) / double(n);
  out["examples"] = n;
  return out;
}

void ModelCore::run_batches(const Tensor& in, std::int64_t batch,
                            const std::function<Tensor(std::int64_t, std::int64_t)>& labels,
                            const std::function<void(std::int64_t, std::int64_t, const train::StepResult&)>& each) {
  const std::int64_t n = in.shape()[0], per_row = spec_.input.numel();
  py::gil_scoped_release release;
  std::lock_guard lock(mu_);
  ensure_variables();
  for (std::int64_t begin = 0; begin < n; begin += batch) {
    const std::int64_t rows = std::min(batch, n - begin);
    std::vector<std::int64_t> dims{rows};
    dims.insert(dims.end(), spec_.input.dims().begin(), spec_.input.dims().end());
    each(begin, rows, graph_for(rows).run(in.view(begin * per_row, Shape(dims)), labels(begin, rows), variables_));
  }
}

config::JobConfig ModelCore::fit_job(const FitArgs& args) const {
  // The model's job as one process over batches from Python: no cluster, no files.
  YAML::Node root = YAML::Load(job_.resolved_yaml);
  root.remove("cluster");
  root["data"] = YAML::Load("{format: python}");
  YAML::Emitter out;
  out << root;
  config::JobConfig job = config::parse_job_config(out.c_str(), "<Model.fit>", args.overrides);
  TRIB_CHECK(job.data.external(), InvalidArgument, "Model.fit: data.format must stay python, got {}", job.data.format);
  TRIB_CHECK(job.model.input == job_.model.input && job.model.classes == job_.model.classes &&
                 job.model.layers.size() == job_.model.layers.size(),
             InvalidArgument, "Model.fit: the model section may not be overridden");
  return job;
}

py::dict ModelCore::fit_arrays(const py::handle& x, const py::handle& y, const FitArgs& args) {
  config::JobConfig job = fit_job(args);
  Tensor features = features_from_numpy(x, spec_.input, "x");
  const std::int64_t n = features.shape()[0];
  Tensor labels = labels_from_numpy(y, n, spec_.classes, "y");
  auto floats = features.span<float>();
  auto ints = labels.span<std::int32_t>();
  auto dataset = std::make_shared<data::InMemoryDataset>(data::InMemoryDataset::from_floats(
      spec_.input, std::vector<float>(floats.begin(), floats.end()), std::vector<std::int32_t>(ints.begin(), ints.end())));
  train::Distribution single;
  NullFile quiet;
  train::DatasetBatchSource source(dataset, job, single, args.verbose ? stdout : quiet.f);
  train::SourceTrainingOptions plan;
  plan.steps_per_epoch = source.steps_per_epoch();
  plan.total_steps = job.training.steps > 0 ? job.training.steps
                                            : static_cast<std::int64_t>(std::ceil(job.training.epochs * plan.steps_per_epoch));
  plan.report_every = job.training.eval_every;
  InterruptStop stop;
  return fit(source, job, plan, args, stop);
}

py::dict ModelCore::fit_iterator(const py::iterator& it, std::int64_t steps, std::int64_t steps_per_epoch,
                                 const FitArgs& args) {
  config::JobConfig job = fit_job(args);
  TRIB_CHECK(!args.resume, InvalidArgument, "Model.fit: a run over an iterator cannot be resumed (it has no positions)");
  TRIB_CHECK(steps >= 0 && steps_per_epoch >= 0, InvalidArgument,
             "Model.fit: steps ({}) and steps_per_epoch ({}) must be >= 0", steps, steps_per_epoch);
  InterruptStop stop;
  IteratorSource source(it, spec_.input, spec_.classes, job.training.batch, &stop);
  train::SourceTrainingOptions plan;
  plan.total_steps = steps;
  plan.steps_per_epoch = steps_per_epoch;
  plan.report_every = job.training.eval_every;
  return fit(source, job, plan, args, stop);
}

py::dict ModelCore::fit(train::BatchSource& source, const config::JobConfig& job, train::SourceTrainingOptions plan,
                        const FitArgs& args, InterruptStop& stop) {
  NullFile quiet;
  train::TrainerOptions o;
  o.job = job;
  o.output = args.run_dir;
  o.resume = args.resume;
  o.log = args.verbose ? stdout : quiet.f;
  o.interactive = args.verbose && train::Progress::is_terminal(stdout);
  o.stop = &stop;
  VariableStore initial;
  {
    std::lock_guard lock(mu_);
    ensure_variables();
    for (const std::string& name : variables_.names()) initial.set(name, variables_.get(name));
  }
  plan.initial = &initial;
  const bool has_step = !args.on_step.is_none(), has_report = !args.on_report.is_none();
  plan.on_step = [&](const train::StepMetrics& m) {
    if (!has_step) return;
    py::gil_scoped_acquire gil;
    py::dict d;
    d["step"] = m.step;
    d["epoch"] = m.epoch;
    d["loss"] = m.loss;
    d["accuracy"] = m.accuracy;
    d["rows"] = m.rows;
    try {
      if (args.on_step(d).is(py::bool_(false))) stop.request();
    } catch (py::error_already_set& e) {
      if (!stop.take_interrupt(e)) throw;
    }
  };
  plan.on_report = [&](std::int64_t step, double epoch, VariableStore& vars) {
    {
      std::lock_guard lock(mu_);
      for (const std::string& name : vars.names()) variables_.set(name, vars.get(name));
      step_ = step;
    }
    if (!has_report) return;
    py::gil_scoped_acquire gil;
    try {
      args.on_report(step, epoch);
    } catch (py::error_already_set& e) {
      if (!stop.take_interrupt(e)) throw;
    }
  };
  train::SourceTrainingResult result;
  {
    py::gil_scoped_release release;
    result = train::train_on_source(o, source, plan);
    std::lock_guard lock(mu_);
    for (const std::string& name : result.variables.names()) variables_.set(name, result.variables.get(name));
    step_ = result.summary.steps;
  }
  stop.raise_if_interrupted();
  py::dict out;
  out["steps"] = result.summary.steps;
  out["epochs"] = result.summary.epochs;
  out["wall_s"] = result.summary.wall_s;
  out["images_per_s"] = result.summary.images_per_s;
  out["run_dir"] = args.run_dir;
  return out;
}

}  // namespace trib::python
