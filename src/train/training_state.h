// Finding checkpoints to resume or evaluate, and the data position's form in a manifest.
// (What goes into a checkpoint is the UpdateStrategy's business: see its save and start.)
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>

#include "trib/checkpoint/checkpoint.h"
#include "trib/data/pipeline.h"
#include "trib/nn/layer.h"
#include "trib/update/update_strategy.h"

namespace trib::train {

// The newest valid checkpoint under run_dir/checkpoints. Throws NotFound when there is none
// (so `--resume` of a directory without checkpoints is an error, not a fresh start).
ValidCheckpoint find_resume_checkpoint(const std::filesystem::path& run_dir, std::FILE* log);

// Copies the model's parameters out of a checkpoint, checking each is present with the
// expected shape (errors name the parameter and the checkpoint).
void restore_variables(const Checkpoint& ckpt, const std::vector<nn::Parameter>& params, VariableStore& vars);

// A checkpoint given as a ckpt-<step> directory, a checkpoints root, or a run directory.
Checkpoint load_checkpoint_for_eval(const std::filesystem::path& path, std::FILE* log);

nlohmann::json data_position_to_json(const data::DataPosition& position);
data::DataPosition data_position_from_json(const nlohmann::json& j);

}  // namespace trib::train
