// The layer-to-node mapping of the ONNX exporter; the numerics are checked end to end by
// tests/e2e/export (an independent NumPy evaluation of whole exported models).
#include <gtest/gtest.h>

#include "export/onnx_layers.h"
#include "trib/core/error.h"

namespace trib::onnx_export {
namespace {

std::vector<std::string> op_types(const onnx::GraphProto& g) {
  std::vector<std::string> out;
  for (const onnx::NodeProto& n : g.node()) out.push_back(n.op_type());
  return out;
}

TEST(OnnxLayers, DenseIsGemmWithABiasAndMatMulWithout) {
  VariableStore vars;
  vars.set("d/w", Tensor::full(Shape{3, 2}, 0.5f));
  vars.set("d/b", Tensor::full(Shape{2}, 1.0f));
  onnx::GraphProto proto;
  OnnxGraph g(proto);
  config::LayerConfig l;
  l.type = "dense";
  l.dense.units = 2;
  l.dense.activation = nn::Activation::tanh;
  EXPECT_EQ(emit_layer(g, l, "d", "x", vars), "d/tanh");
  l.dense.use_bias = false;
  l.dense.activation = nn::Activation::none;
  EXPECT_EQ(emit_layer(g, l, "d", "y", vars), "d/linear");
  EXPECT_EQ(op_types(proto), (std::vector<std::string>{"Gemm", "Tanh", "MatMul"}));
  ASSERT_EQ(proto.initializer_size(), 3);
  EXPECT_EQ(proto.initializer(0).name(), "d/w");
  EXPECT_EQ(proto.initializer(0).raw_data().size(), 6 * sizeof(float));
}

TEST(OnnxLayers, ConvPadsAsTheLayerDoes) {
  VariableStore vars;
  vars.set("c/w", Tensor::full(Shape{4, 1, 5, 5}, 0.1f));
  vars.set("c/b", Tensor::full(Shape{4}, 0.0f));
  onnx::GraphProto proto;
  OnnxGraph g(proto);
  config::LayerConfig l;
  l.type = "conv2d";
  l.conv.filters = 4;
  l.conv.kernel = 5;
  l.conv.padding = -1;  // "same": kernel / 2
  emit_layer(g, l, "c", "x", vars);
  const onnx::NodeProto& conv = proto.node(0);
  ASSERT_EQ(conv.op_type(), "Conv");
  std::vector<std::int64_t> pads;
  for (const onnx::AttributeProto& a : conv.attribute())
    if (a.name() == "pads") pads.assign(a.ints().begin(), a.ints().end());
  EXPECT_EQ(pads, (std::vector<std::int64_t>{2, 2, 2, 2}));
}

TEST(OnnxLayers, AnUncoveredKindIsOneLineNamingTheLayer) {
  VariableStore vars;
  onnx::GraphProto proto;
  OnnxGraph g(proto);
  config::LayerConfig l;
  l.type = "lstm";
  try {
    emit_layer(g, l, "rnn_3", "x", vars);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'rnn_3' is of type 'lstm', which the exporter does not cover"), std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

TEST(OnnxLayers, AMissingWeightNamesIt) {
  VariableStore vars;
  onnx::GraphProto proto;
  OnnxGraph g(proto);
  config::LayerConfig l;
  l.type = "batch_norm";
  EXPECT_THROW(emit_layer(g, l, "bn", "x", vars), NotFound);
}

}  // namespace
}  // namespace trib::onnx_export
