// conv2d: x [N, C, H, W] * w [O, C, KH, KW] -> y [N, O, OH, OW], by oneDNN (kernels/conv_dnnl)
// with a naive reference (kernels/conv_ref). The same op, with an optional bias [O] and ReLU,
// is the fused node that bias_add and relu become when they follow a convolution
// (fusion.h). Its gradients are the backward ops in conv2d_backward.cc.
#include <array>

#include "engine/kernels/conv_dnnl.h"
#include "engine/kernels/conv_ref.h"
#include "engine/kernels/once_cell.h"
#include "engine/ops/fusion.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

class Conv2dOp final : public Op, public ops::Fusable {
 public:
  Conv2dOp(ops::Conv2dOptions opts, bool bias, bool relu) : opts_(opts), bias_(bias), relu_(relu) {}
  std::string_view name() const override {
    static constexpr std::string_view names[2][2] = {{"conv2d", "conv2d_relu"},
                                                     {"conv2d_bias", "conv2d_bias_relu"}};
    return names[bias_][relu_];
  }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[1].dtype == DType::f32, ShapeError,
               "conv2d needs f32 x and w, got {} and {}", in[0].to_string(), in[1].to_string());
    const Shape y = kernels::conv2d_geometry(in[0].shape, in[1].shape, opts_).y_shape();
    if (bias_)
      TRIB_CHECK(in[2] == (TensorSpec{DType::f32, Shape{y[1]}}), ShapeError,
                 "the bias must be f32[{}] (one per output channel), got {}", y[1], in[2].to_string());
    return {{DType::f32, y}};
  }
  bool accepts_layout(int input) const override { return input == 0; }
  double cost_ns(std::span<const TensorSpec> in, std::span<const TensorSpec>) const override {
    return kernels::conv2d_geometry(in[0].shape, in[1].shape, opts_).cost_ns();
  }

  void compute(KernelContext& ctx) const override {
    const auto& conv = forward_[ctx.training()].get([&] {
      return kernels::ConvForwardDnnl(geometry(ctx), bias_, relu_, ctx.training(),
                                      ctx.engine().dnnl_engine());
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    conv.run(call, ctx.input(0), ctx.input_layout(0).get(), ctx.input(1),
             bias_ ? &ctx.input(2) : nullptr, ctx.output_in_layout(0, conv.dst_layout()));
  }
  void reference(KernelContext& ctx) const override {
    const kernels::Conv2dGeometry g = geometry(ctx);
    float* y = ctx.output(0).data<float>();
    kernels::conv2d_forward_ref(g, ctx.input(0).data<float>(), ctx.input(1).data<float>(), y);
    const float* b = bias_ ? ctx.input(2).data<float>() : nullptr;
    const std::int64_t plane = g.oh * g.ow;
    for (std::int64_t i = 0; i < g.y_shape().numel(); ++i) {
      if (b) y[i] += b[(i / plane) % g.o];
      if (relu_) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
    }
  }
  // With y = relu(conv(x, w) + b): d = dy where y > 0 (ReLU's gradient from its output),
  // then the convolution's two backward ops; the bias gradient comes with the weights'.
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    Graph& g = ctx.graph;
    Value d = ctx.grad();
    if (relu_) d = ops::backward::activation(g, ops::backward::Activation::relu, d, ctx.output(0));
    Value dx = ops::backward::conv2d_data(g, d, ctx.input(1), ctx.input_spec(0).shape, opts_);
    const Shape& w_shape = ctx.input_spec(1).shape;
    if (!bias_) return {{dx, {}}, {ops::backward::conv2d_weights(g, ctx.input(0), d, w_shape, opts_), {}}};
    auto [dw, db] = ops::backward::conv2d_weights_and_bias(g, ctx.input(0), d, w_shape, opts_);
    return {{dx, {}}, {dw, {}}, {db, {}}};
  }

  std::optional<Value> fuse_bias(Graph& g, const Node& self, Value bias,
                                 const std::string& name) const override {
    if (bias_ || relu_) return std::nullopt;
    return ops::conv2d_fused(g, self.inputs[0], self.inputs[1], bias, false, opts_, name);
  }
  std::optional<Value> fuse_relu(Graph& g, const Node& self, const std::string& name) const override {
    if (relu_) return std::nullopt;
    return ops::conv2d_fused(g, self.inputs[0], self.inputs[1], bias_ ? self.inputs[2] : Value{},
                             true, opts_, name);
  }
  std::optional<Value> without_relu(Graph& g, const Node& self) const override {
    if (!relu_) return std::nullopt;
    return ops::conv2d_fused(g, self.inputs[0], self.inputs[1], bias_ ? self.inputs[2] : Value{},
                             false, opts_);
  }

 private:
  kernels::Conv2dGeometry geometry(const KernelContext& ctx) const {
    return kernels::conv2d_geometry(ctx.input_spec(0).shape, ctx.input_spec(1).shape, opts_);
  }

  ops::Conv2dOptions opts_;
  bool bias_, relu_;
  std::array<kernels::OnceCell<kernels::ConvForwardDnnl>, 2> forward_;  // [training]
};

}  // namespace

Value ops::conv2d(Graph& g, Value x, Value w, Conv2dOptions opts, const std::string& name) {
  return g.add1(std::make_shared<Conv2dOp>(opts, false, false), {x, w}, name);
}

Value ops::conv2d_fused(Graph& g, Value x, Value w, Value bias, bool relu, Conv2dOptions opts,
                        const std::string& name) {
  std::vector<Value> inputs{x, w};
  if (bias.valid()) inputs.push_back(bias);
  return g.add1(std::make_shared<Conv2dOp>(opts, bias.valid(), relu), std::move(inputs), name);
}

}  // namespace trib
