// Each layer kind of the model library as ONNX nodes (opset 13), inference semantics:
//   dense       Gemm (MatMul without a bias), then its activation
//   conv2d      Conv (symmetric zero padding), then its activation
//   max_pool2d  MaxPool, avg_pool2d AveragePool (no padding, floor: as trib's pools)
//   flatten     Flatten(axis 1)
//   activation  Relu, Sigmoid, Tanh, Softmax(axis -1: trib's softmax is over the last axis)
//   batch_norm  BatchNormalization with the running statistics
//   dropout     Identity (dropout is the identity at inference)
//   embedding   Cast to int64, then Gather(axis 0) from the table
#pragma once

#include <string>

#include "export/onnx_graph.h"
#include "trib/config/job_config.h"
#include "trib/engine/executor.h"

namespace trib::onnx_export {

// The layer kinds covered, in a sentence: for the error an uncovered one gets.
extern const char* const kCoveredLayers;

// Appends the nodes of layer `layer` (named `name`, as training named it) reading value
// `input`; returns the name of its output. Weights come from `vars` under the layer's
// parameter names. Throws InvalidArgument naming the layer for a kind not covered.
std::string emit_layer(OnnxGraph& graph, const config::LayerConfig& layer, const std::string& name,
                       const std::string& input, const VariableStore& vars);

// Appends `activation` (none adds nothing) reading `input`; returns the output's name.
std::string emit_activation(OnnxGraph& graph, nn::Activation activation, const std::string& prefix,
                            const std::string& input);

}  // namespace trib::onnx_export
