// A thin writer over onnx::GraphProto (Debian libonnx-dev's generated onnx-ml.pb.h): nodes
// with their attributes, and f32 initializers taken from trib tensors. Value names are the
// trib parameter names for weights ("dense_0/w") and "<layer>/<op>" for node outputs, so
// that a reader of the exported file finds each layer by the name training gave it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "trib/core/tensor.h"

namespace trib::onnx_export {

class OnnxGraph {
 public:
  explicit OnnxGraph(onnx::GraphProto& graph) : graph_(graph) {}

  // Adds `value` (f32) as an initializer named `name`; returns the name.
  std::string initializer(const std::string& name, const Tensor& value);

  // Adds a node; returns it so that attributes can follow.
  onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name);

  // A graph input (of `elem_type`) or output (f32) of shape [batch, dims...], the batch
  // dimension symbolic ("batch").
  void input(const std::string& name, const std::vector<std::int64_t>& dims, int elem_type);
  void output(const std::string& name, const std::vector<std::int64_t>& dims);

 private:
  onnx::GraphProto& graph_;
};

void set_attribute(onnx::NodeProto& node, const std::string& name, std::int64_t value);
void set_attribute(onnx::NodeProto& node, const std::string& name, float value);
void set_attribute(onnx::NodeProto& node, const std::string& name, const std::vector<std::int64_t>& values);

}  // namespace trib::onnx_export
