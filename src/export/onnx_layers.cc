#include "export/onnx_layers.h"

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::onnx_export {

const char* const kCoveredLayers =
    "dense, conv2d, max_pool2d, avg_pool2d, flatten, activation, batch_norm, dropout and embedding";

namespace {

std::string weight(OnnxGraph& graph, const VariableStore& vars, const std::string& name) {
  return graph.initializer(name, vars.get(name));
}

std::string dense(OnnxGraph& g, const config::LayerConfig& l, const std::string& name, const std::string& x,
                  const VariableStore& vars) {
  const std::string w = weight(g, vars, name + "/w");
  const std::string y = name + "/linear";
  if (l.dense.use_bias)
    g.node("Gemm", {x, w, weight(g, vars, name + "/b")}, {y}, name + "/Gemm");
  else
    g.node("MatMul", {x, w}, {y}, name + "/MatMul");
  return emit_activation(g, l.dense.activation, name, y);
}

std::string conv2d(OnnxGraph& g, const config::LayerConfig& l, const std::string& name, const std::string& x,
                   const VariableStore& vars) {
  const nn::Conv2DOptions& o = l.conv;
  std::vector<std::string> inputs{x, weight(g, vars, name + "/w")};
  if (o.use_bias) inputs.push_back(weight(g, vars, name + "/b"));
  const std::int64_t pad = o.padding < 0 ? o.kernel / 2 : o.padding;  // as nn::Conv2D
  const std::string y = name + "/conv";
  onnx::NodeProto& n = g.node("Conv", inputs, {y}, name + "/Conv");
  set_attribute(n, "kernel_shape", std::vector<std::int64_t>{o.kernel, o.kernel});
  set_attribute(n, "strides", std::vector<std::int64_t>{o.stride, o.stride});
  set_attribute(n, "pads", std::vector<std::int64_t>{pad, pad, pad, pad});
  return emit_activation(g, o.activation, name, y);
}

std::string pool(OnnxGraph& g, const std::string& op, const config::LayerConfig& l, const std::string& name,
                 const std::string& x) {
  const std::int64_t size = l.pool_size, stride = l.pool_stride ? l.pool_stride : l.pool_size;
  const std::string y = name + "/pool";
  onnx::NodeProto& n = g.node(op, {x}, {y}, name + "/" + op);
  set_attribute(n, "kernel_shape", std::vector<std::int64_t>{size, size});
  set_attribute(n, "strides", std::vector<std::int64_t>{stride, stride});
  return y;
}

std::string batch_norm(OnnxGraph& g, const config::LayerConfig& l, const std::string& name, const std::string& x,
                       const VariableStore& vars) {
  const std::string y = name + "/batch_norm";
  onnx::NodeProto& n = g.node("BatchNormalization",
                              {x, weight(g, vars, name + "/gamma"), weight(g, vars, name + "/beta"),
                               weight(g, vars, name + "/running_mean"), weight(g, vars, name + "/running_var")},
                              {y}, name + "/BatchNormalization");
  set_attribute(n, "epsilon", l.epsilon);
  set_attribute(n, "momentum", l.momentum);  // the same convention: running = m * running + (1 - m) * batch
  return y;
}

std::string embedding(OnnxGraph& g, const std::string& name, const std::string& x, const VariableStore& vars) {
  const std::string ids = name + "/ids";
  set_attribute(g.node("Cast", {x}, {ids}, name + "/Cast"), "to",
                static_cast<std::int64_t>(onnx::TensorProto_DataType_INT64));
  const std::string y = name + "/rows";
  set_attribute(g.node("Gather", {weight(g, vars, name + "/table"), ids}, {y}, name + "/Gather"), "axis",
                std::int64_t{0});
  return y;
}

}  // namespace

std::string emit_activation(OnnxGraph& g, nn::Activation activation, const std::string& prefix,
                            const std::string& x) {
  std::string op;
  switch (activation) {
    case nn::Activation::none: return x;
    case nn::Activation::relu: op = "Relu"; break;
    case nn::Activation::sigmoid: op = "Sigmoid"; break;
    case nn::Activation::tanh: op = "Tanh"; break;
    case nn::Activation::softmax: op = "Softmax"; break;
  }
  const std::string y = prefix + "/" + nn::activation_name(activation);
  onnx::NodeProto& n = g.node(op, {x}, {y}, prefix + "/" + op);
  if (activation == nn::Activation::softmax) set_attribute(n, "axis", std::int64_t{-1});
  return y;
}

std::string emit_layer(OnnxGraph& g, const config::LayerConfig& l, const std::string& name, const std::string& x,
                       const VariableStore& vars) {
  if (l.type == "dense") return dense(g, l, name, x, vars);
  if (l.type == "conv2d") return conv2d(g, l, name, x, vars);
  if (l.type == "max_pool2d") return pool(g, "MaxPool", l, name, x);
  if (l.type == "avg_pool2d") return pool(g, "AveragePool", l, name, x);
  if (l.type == "batch_norm") return batch_norm(g, l, name, x, vars);
  if (l.type == "embedding") return embedding(g, name, x, vars);
  if (l.type == "activation") return emit_activation(g, l.activation, name, x);
  if (l.type == "flatten") {
    set_attribute(g.node("Flatten", {x}, {name + "/flat"}, name + "/Flatten"), "axis", std::int64_t{1});
    return name + "/flat";
  }
  if (l.type == "dropout") {
    g.node("Identity", {x}, {name + "/identity"}, name + "/Identity");
    return name + "/identity";
  }
  throw InvalidArgument(fmt::format("ONNX export: layer '{}' is of type '{}', which the exporter does not cover "
                                    "(it covers {})",
                                    name, l.type, kCoveredLayers));
}

}  // namespace trib::onnx_export
