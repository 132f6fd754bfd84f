// The model of a run directory, as `trib export` and `trib serve` take it: the job it was
// trained with (<run>/config.yaml, the resolved configuration) and the variables of one of
// its checkpoints. Both commands read a run written by `trib train`, whatever its strategy:
// checkpoint tensors carry the model's parameter names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "trib/config/job_config.h"
#include "trib/engine/executor.h"
#include "trib/nn/sequential.h"

namespace trib::onnx_export {

struct RunModel {
  std::filesystem::path run_dir;
  config::JobConfig job;
  std::shared_ptr<nn::Sequential> model;  // layers named as training named them
  Shape input;                            // one example's shape
  std::int64_t classes = 0;
  std::vector<nn::Parameter> parameters;  // an inference build's, in declaration order
};

// Reads <run_dir>/config.yaml and builds the model. Throws NotFound naming the file when the
// directory holds no config.yaml (not a run directory), InvalidArgument for a bad model.
RunModel load_run_model(const std::filesystem::path& run_dir);

// The variables of one checkpoint, complete and verified.
struct CheckpointVariables {
  std::int64_t step = 0;
  std::filesystem::path dir;
  std::shared_ptr<const VariableStore> vars;
};

// The newest checkpoint of <run_dir>/checkpoints that loads and holds every parameter with
// the model's shape (older ones are tried when a newer one is damaged). nullopt when there is
// none yet (a run that has not checkpointed); throws when checkpoints exist but none fits.
std::optional<CheckpointVariables> load_newest_variables(const RunModel& run);

// One checkpoint directory (ckpt-<step>). Throws NotFound, Corruption or ShapeError naming
// the checkpoint and the tensor.
CheckpointVariables load_variables(const RunModel& run, const std::filesystem::path& checkpoint_dir);

}  // namespace trib::onnx_export
