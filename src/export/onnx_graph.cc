#include "export/onnx_graph.h"

#include <bit>

#include "trib/core/error.h"

namespace trib::onnx_export {

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

namespace {

void set_shape(onnx::ValueInfoProto& info, const std::vector<std::int64_t>& dims, int elem_type) {
  onnx::TypeProto_Tensor* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  for (std::int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

}  // namespace

std::string OnnxGraph::initializer(const std::string& name, const Tensor& value) {
  TRIB_CHECK(value.dtype() == DType::f32, InvalidArgument, "ONNX export: initializer '{}' is {}, expected f32",
             name, value.spec_string());
  onnx::TensorProto* t = graph_.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (std::int64_t d : value.shape().dims()) t->add_dims(d);
  t->set_raw_data(value.data<float>(), value.nbytes());
  return name;
}

onnx::NodeProto& OnnxGraph::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto* n = graph_.add_node();
  n->set_op_type(op_type);
  n->set_name(name);
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return *n;
}

void OnnxGraph::input(const std::string& name, const std::vector<std::int64_t>& dims, int elem_type) {
  onnx::ValueInfoProto* info = graph_.add_input();
  info->set_name(name);
  set_shape(*info, dims, elem_type);
}

void OnnxGraph::output(const std::string& name, const std::vector<std::int64_t>& dims) {
  onnx::ValueInfoProto* info = graph_.add_output();
  info->set_name(name);
  set_shape(*info, dims, onnx::TensorProto_DataType_FLOAT);
}

void set_attribute(onnx::NodeProto& node, const std::string& name, std::int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(value);
}

void set_attribute(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(value);
}

void set_attribute(onnx::NodeProto& node, const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (std::int64_t v : values) a->add_ints(v);
}

}  // namespace trib::onnx_export
