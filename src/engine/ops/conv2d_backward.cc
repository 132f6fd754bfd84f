// conv2d's backward ops: the gradient with respect to the input (backward data, inputs
// dy and w) and with respect to the weights (backward weights, inputs x and dy; optionally
// also the bias gradient, a second output the same primitive computes). Each holds the
// shape of the tensor it differentiates, which its inputs alone do not determine. x and dy
// may arrive in oneDNN's blocked layouts; dx leaves in the layout the primitive chose.
#include "engine/kernels/conv_dnnl.h"
#include "engine/kernels/conv_ref.h"
#include "engine/kernels/once_cell.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

void check_dy(const kernels::Conv2dGeometry& g, const TensorSpec& dy) {
  TRIB_CHECK(dy.dtype == DType::f32 && dy.shape == g.y_shape(), ShapeError,
             "dy must be f32{} (the convolution's output), got {}", g.y_shape().to_string(),
             dy.to_string());
}

class Conv2dBackwardDataOp final : public Op {
 public:
  Conv2dBackwardDataOp(ops::Conv2dOptions opts, Shape x_shape)
      : opts_(opts), x_shape_(std::move(x_shape)) {}
  std::string_view name() const override { return "conv2d_backward_data"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[1].dtype == DType::f32, ShapeError, "w must be f32, got {}", in[1].to_string());
    check_dy(kernels::conv2d_geometry(x_shape_, in[1].shape, opts_), in[0]);
    return {{DType::f32, x_shape_}};
  }
  bool accepts_layout(int input) const override { return input == 0; }
  double cost_ns(std::span<const TensorSpec> in, std::span<const TensorSpec>) const override {
    return kernels::conv2d_geometry(x_shape_, in[1].shape, opts_).cost_ns();
  }
  void compute(KernelContext& ctx) const override {
    const auto& conv = prim_.get([&] {
      return kernels::ConvBackwardDataDnnl(geometry(ctx), ctx.engine().dnnl_engine());
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    conv.run(call, ctx.input(0), ctx.input_layout(0).get(), ctx.input(1),
             ctx.output_in_layout(0, conv.diff_src_layout()));
  }
  void reference(KernelContext& ctx) const override {
    kernels::conv2d_backward_data_ref(geometry(ctx), ctx.input(0).data<float>(),
                                      ctx.input(1).data<float>(), ctx.output(0).data<float>());
  }

 private:
  kernels::Conv2dGeometry geometry(const KernelContext& ctx) const {
    return kernels::conv2d_geometry(x_shape_, ctx.input_spec(1).shape, opts_);
  }

  ops::Conv2dOptions opts_;
  Shape x_shape_;
  kernels::OnceCell<kernels::ConvBackwardDataDnnl> prim_;
};

// Outputs dw, then db when built with the bias.
class Conv2dBackwardWeightsOp final : public Op {
 public:
  Conv2dBackwardWeightsOp(ops::Conv2dOptions opts, Shape w_shape, bool bias)
      : opts_(opts), w_shape_(std::move(w_shape)), bias_(bias) {}
  std::string_view name() const override {
    return bias_ ? "conv2d_backward_weights_bias" : "conv2d_backward_weights";
  }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "x must be f32, got {}", in[0].to_string());
    check_dy(kernels::conv2d_geometry(in[0].shape, w_shape_, opts_), in[1]);
    std::vector<TensorSpec> out{{DType::f32, w_shape_}};
    if (bias_) out.push_back({DType::f32, Shape{w_shape_[0]}});
    return out;
  }
  bool accepts_layout(int input) const override { return input <= 1; }
  double cost_ns(std::span<const TensorSpec> in, std::span<const TensorSpec>) const override {
    return kernels::conv2d_geometry(in[0].shape, w_shape_, opts_).cost_ns();
  }
  void compute(KernelContext& ctx) const override {
    const auto& conv = prim_.get([&] {
      return kernels::ConvBackwardWeightsDnnl(geometry(ctx), bias_, ctx.engine().dnnl_engine());
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    conv.run(call, ctx.input(0), ctx.input_layout(0).get(), ctx.input(1),
             ctx.input_layout(1).get(), ctx.output(0), bias_ ? &ctx.output(1) : nullptr);
  }
  void reference(KernelContext& ctx) const override {
    const kernels::Conv2dGeometry g = geometry(ctx);
    const float* dy = ctx.input(1).data<float>();
    kernels::conv2d_backward_weights_ref(g, ctx.input(0).data<float>(), dy,
                                         ctx.output(0).data<float>());
    if (!bias_) return;
    float* db = ctx.output(1).data<float>();
    for (std::int64_t o = 0; o < g.o; ++o) {
      double s = 0;
      for (std::int64_t n = 0; n < g.n; ++n)
        for (std::int64_t i = 0; i < g.oh * g.ow; ++i) s += dy[(n * g.o + o) * g.oh * g.ow + i];
      db[o] = static_cast<float>(s);
    }
  }

 private:
  kernels::Conv2dGeometry geometry(const KernelContext& ctx) const {
    return kernels::conv2d_geometry(ctx.input_spec(0).shape, w_shape_, opts_);
  }

  ops::Conv2dOptions opts_;
  Shape w_shape_;
  bool bias_;
  kernels::OnceCell<kernels::ConvBackwardWeightsDnnl> prim_;
};

}  // namespace

Value ops::backward::conv2d_data(Graph& g, Value dy, Value w, Shape x_shape, Conv2dOptions opts) {
  return g.add1(std::make_shared<Conv2dBackwardDataOp>(opts, std::move(x_shape)), {dy, w});
}

Value ops::backward::conv2d_weights(Graph& g, Value x, Value dy, Shape w_shape,
                                    Conv2dOptions opts) {
  return g.add1(std::make_shared<Conv2dBackwardWeightsOp>(opts, std::move(w_shape), false), {x, dy});
}

ops::backward::WeightsAndBias ops::backward::conv2d_weights_and_bias(Graph& g, Value x, Value dy,
                                                                     Shape w_shape,
                                                                     Conv2dOptions opts) {
  auto out = g.add(std::make_shared<Conv2dBackwardWeightsOp>(opts, std::move(w_shape), true), {x, dy});
  return {out[0], out[1]};
}

}  // namespace trib
