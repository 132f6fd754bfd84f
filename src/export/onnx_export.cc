#include "export/onnx_export.h"

#include <fstream>

#include <fmt/format.h>

#include "export/onnx_layers.h"
#include "trib/core/error.h"

namespace trib::onnx_export {

namespace fs = std::filesystem;

onnx::ModelProto to_onnx(const RunModel& run, const CheckpointVariables& vars, const OnnxOptions& options) {
  TRIB_CHECK(options.opset >= 13, InvalidArgument, "ONNX export: opset {} is too old: expected 13 or later",
             options.opset);
  onnx::ModelProto model;
  model.set_ir_version(7);  // the IR version of opset 13 (ONNX 1.8)
  model.set_producer_name("tributary");
  model.set_producer_version(options.producer_version);
  model.set_model_version(vars.step);
  model.set_doc_string(fmt::format("job {}, checkpoint {} (step {})", run.job.name, vars.dir.string(), vars.step));
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);

  onnx::GraphProto* proto = model.mutable_graph();
  proto->set_name(run.job.name);
  OnnxGraph g(*proto);
  g.input("features", run.input.dims(), onnx::TensorProto_DataType_FLOAT);
  // The layers as training built them (names from nn::Sequential), the options from the job.
  const auto& layers = run.model->layers();
  TRIB_CHECK(layers.size() == run.job.model.layers.size(), InvalidArgument,
             "ONNX export: the model has {} layers but the job lists {}", layers.size(), run.job.model.layers.size());
  std::string x = "features";
  for (std::size_t i = 0; i < layers.size(); ++i)
    x = emit_layer(g, run.job.model.layers[i], layers[i]->name(), x, *vars.vars);
  g.node("Identity", {x}, {"logits"}, "output/logits");
  set_attribute(g.node("Softmax", {"logits"}, {"probabilities"}, "output/probabilities"), "axis", std::int64_t{-1});
  g.output("logits", {run.classes});
  g.output("probabilities", {run.classes});
  return model;
}

void write_onnx(const onnx::ModelProto& model, const fs::path& path) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    TRIB_CHECK(out.good(), IoError, "cannot write {}", tmp.string());
    TRIB_CHECK(model.SerializeToOstream(&out), IoError, "cannot serialise the ONNX model to {}", tmp.string());
    out.close();
    TRIB_CHECK(out.good(), IoError, "cannot write {} (disk full?)", tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  TRIB_CHECK(!ec, IoError, "cannot rename {} to {}: {}", tmp.string(), path.string(), ec.message());
}

}  // namespace trib::onnx_export
