#include "export/run_model.h"

#include <fmt/format.h>

#include "trib/checkpoint/checkpoint.h"
#include "trib/core/error.h"

namespace trib::onnx_export {

namespace fs = std::filesystem;

RunModel load_run_model(const fs::path& run_dir) {
  const fs::path config_file = run_dir / "config.yaml";
  TRIB_CHECK(fs::is_regular_file(config_file), NotFound,
             "{} is not a run directory: it has no config.yaml (expected the --output directory of `trib train`)",
             run_dir.string());
  RunModel run;
  run.run_dir = run_dir;
  run.job = config::load_job_config(config_file.string());
  run.model = config::build_model(run.job.model);
  run.input = Shape(run.job.model.input);
  run.classes = run.job.model.classes;
  // An inference build names the parameters (and checks the layers fit the input) without
  // an engine: nothing is run.
  Graph g;
  nn::ModelBuilder mb(g, /*training=*/false);
  std::vector<std::int64_t> dims{1};
  dims.insert(dims.end(), run.input.dims().begin(), run.input.dims().end());
  Value out = (*run.model)(mb, g.placeholder("features", {DType::f32, Shape(dims)}));
  const Shape& os = g.spec(out).shape;
  TRIB_CHECK(os.rank() == 2 && os[1] == run.classes, ShapeError,
             "{}: the model's output is {} but [batch, {}] (model.classes) was expected", config_file.string(),
             os.to_string(), run.classes);
  run.parameters = mb.parameters();
  return run;
}

CheckpointVariables load_variables(const RunModel& run, const fs::path& checkpoint_dir) {
  Checkpoint ckpt = Checkpoint::load(checkpoint_dir);  // verifies every CRC32C
  auto vars = std::make_shared<VariableStore>();
  for (const nn::Parameter& p : run.parameters) {
    const Tensor t = ckpt.variable(p.name);  // whole, or joined from a parameter server's row slices
    TRIB_CHECK(t.dtype() == DType::f32 && t.shape() == p.shape, ShapeError,
               "checkpoint {}: tensor '{}' is {} but the model needs f32{}", checkpoint_dir.string(), p.name,
               t.spec_string(), p.shape.to_string());
    vars->set(p.name, t);
  }
  return CheckpointVariables{ckpt.step(), checkpoint_dir, std::move(vars)};
}

std::optional<CheckpointVariables> load_newest_variables(const RunModel& run) {
  std::vector<CheckpointRef> refs = list_checkpoints(run.run_dir / "checkpoints");
  if (refs.empty()) return std::nullopt;
  std::string reasons;
  for (auto it = refs.rbegin(); it != refs.rend(); ++it) {
    try {
      return load_variables(run, it->dir);
    } catch (const Error& e) {
      reasons += fmt::format("; {}", e.what());
    }
  }
  throw Corruption(fmt::format("run {}: no checkpoint loads{}", run.run_dir.string(), reasons));
}

}  // namespace trib::onnx_export
