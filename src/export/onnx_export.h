// `trib export --format onnx`: a run's model and one checkpoint's variables as an ONNX model
// (opset 13, IR version 7), inference semantics. The graph has one input, "features"
// [batch, input...] (f32), and two outputs: "logits" [batch, classes], what the model
// computes, and "probabilities", their softmax (what the training loss reads the logits as).
// docs/serving.md lists the layer mapping.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "export/run_model.h"

namespace trib::onnx_export {

struct OnnxOptions {
  std::int64_t opset = 13;
  std::string producer_version;  // trib's version, recorded in the file
};

// Throws InvalidArgument naming the layer if the model holds a layer kind not covered.
onnx::ModelProto to_onnx(const RunModel& run, const CheckpointVariables& vars, const OnnxOptions& options);

// Serialises `model` to `path` through a temporary file and a rename, so that a reader never
// sees half a file. Throws IoError naming the path.
void write_onnx(const onnx::ModelProto& model, const std::filesystem::path& path);

}  // namespace trib::onnx_export
