#include "trib/update/update_strategy.h"

#include "checkpoint/crc32c.h"

namespace trib::update {

std::uint32_t variables_crc32c(const VariableStore& vars) {
  std::uint32_t crc = 0;
  for (const std::string& name : vars.names()) {
    const Tensor& t = vars.get(name);
    crc = crc32c(t.raw_data(), t.nbytes(), crc);
  }
  return crc;
}

std::int64_t UpdateStrategy::start(VariableStore& vars, const Checkpoint* checkpoint) {
  if (checkpoint == nullptr) return 0;
  for (const std::string& name : vars.names()) {
    Tensor& v = vars.get(name);
    const Tensor t = checkpoint->variable(name);  // whole, or joined from a parameter server's row slices
    TRIB_CHECK(t.dtype() == v.dtype() && t.shape() == v.shape(), ShapeError,
               "checkpoint {}: tensor '{}' is {} but the model needs {}", checkpoint->dir().string(), name,
               t.spec_string(), v.spec_string());
    vars.set(name, t);
  }
  restore_state(checkpoint->tensors_with_prefix("slot/"));
  return checkpoint->step();
}

void UpdateStrategy::save(CheckpointWriter& writer, const VariableStore& vars) {
  TensorMap model;
  for (const std::string& name : vars.names()) model[name] = vars.get(name);
  writer.add_shard("model", model);
  TensorMap slots = state();
  if (!slots.empty()) writer.add_shard("optimizer", slots);
}

}  // namespace trib::update
