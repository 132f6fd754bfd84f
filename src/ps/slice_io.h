// Moving slices between a server's flat buffer and checkpoint tensors. A checkpoint stores
// each slice under its key ("w" whole, "w@512" for rows from 512), and its optimizer slots as
// "slot/<key>/<slot>". Reading assembles any row range from whatever pieces the checkpoint
// has, so a checkpoint written by N servers restores onto M (resharding).
#pragma once

#include <nlohmann/json.hpp>

#include "trib/checkpoint/checkpoint.h"
#include "trib/optim/slot_store.h"
#include "trib/ps/placement.h"

namespace trib::ps {

const VariableInfo& variable_info(const std::vector<VariableInfo>& vars, const std::string& name);
Shape slice_shape_of(const VariableInfo& v, const Slice& s);

void write_slices(const std::vector<VariableInfo>& vars, const std::vector<Slice>& slices, const Tensor& values,
                  SlotStore& slots, TensorMap& out);
// Fills `values` (and the slots that the checkpoint has for every piece) for `slices`.
// Throws NotFound naming the variable and rows no piece covers.
void read_slices(const Checkpoint& ckpt, const std::vector<VariableInfo>& vars, const std::vector<Slice>& slices,
                 Tensor& values, SlotStore& slots);

}  // namespace trib::ps
