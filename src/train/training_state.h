// Saving and restoring everything a resumed run needs to continue exactly where it stopped:
// variables (shard "model"), optimizer slots (shard "optimizer"), the step, and the data
// pipeline's position (in the manifest).
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>

#include "trib/checkpoint/checkpoint.h"
#include "trib/data/pipeline.h"
#include "trib/train/update_strategy.h"

namespace trib::train {

// The newest valid checkpoint under run_dir/checkpoints. Throws NotFound when there is none
// (so `--resume` of a directory without checkpoints is an error, not a fresh start).
ValidCheckpoint find_resume_checkpoint(const std::filesystem::path& run_dir, std::FILE* log);

std::filesystem::path save_training_state(const std::filesystem::path& root, std::int64_t step,
                                          std::int64_t epoch, const VariableStore& vars,
                                          const UpdateStrategy& update, const data::Pipeline& pipeline);

// Restores variables, optimizer state and data position; returns the step to continue from.
std::int64_t restore_training_state(const Checkpoint& ckpt, VariableStore& vars, UpdateStrategy& update,
                                    data::Pipeline& pipeline);

// Copies the model's parameters out of a checkpoint, checking each is present with the
// expected shape (errors name the parameter and the checkpoint).
void restore_variables(const Checkpoint& ckpt, const std::vector<nn::Parameter>& params, VariableStore& vars);

// A checkpoint given as a ckpt-<step> directory, a checkpoints root, or a run directory.
Checkpoint load_checkpoint_for_eval(const std::filesystem::path& path, std::FILE* log);

nlohmann::json data_position_to_json(const data::DataPosition& position);
data::DataPosition data_position_from_json(const nlohmann::json& j);

}  // namespace trib::train
