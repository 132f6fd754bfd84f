// `trib export RUN_DIR --format onnx --output model.onnx`: the newest checkpoint (or the one
// --checkpoint names) of a run as an ONNX model (export/onnx_export.h).
#include <fmt/format.h>

#include "app/commands.h"
#include "build_info.h"
#include "export/onnx_export.h"
#include "trib/core/error.h"

namespace trib::app {

int run_export(const ExportArgs& args) {
  TRIB_CHECK(args.format == "onnx", InvalidArgument, "--format {}: expected onnx", args.format);
  onnx_export::RunModel run = onnx_export::load_run_model(args.run_dir);
  std::optional<onnx_export::CheckpointVariables> vars;
  if (!args.checkpoint.empty())
    vars = onnx_export::load_variables(run, args.checkpoint);
  else
    vars = onnx_export::load_newest_variables(run);
  TRIB_CHECK(vars.has_value(), NotFound, "run {} has no checkpoint yet (expected {}/checkpoints/ckpt-<step>)",
             args.run_dir, args.run_dir);
  onnx_export::OnnxOptions options;
  options.opset = args.opset;
  options.producer_version = TRIB_VERSION;
  onnx::ModelProto model = onnx_export::to_onnx(run, *vars, options);
  onnx_export::write_onnx(model, args.output);
  fmt::print("exported {} (step {}) to {}: ONNX opset {}, {} nodes, input features [batch, {}], outputs logits and "
             "probabilities [batch, {}]\n",
             vars->dir.string(), vars->step, args.output, args.opset, model.graph().node_size(),
             fmt::join(run.input.dims(), ", "), run.classes);
  return 0;
}

}  // namespace trib::app
