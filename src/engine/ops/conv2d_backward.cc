// conv2d's backward ops: the gradient with respect to the input (backward data, inputs
// dy and w) and with respect to the weights (backward weights, inputs x and dy). Each holds
// the shape of the tensor it differentiates, which its inputs alone do not determine.
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
  void compute(KernelContext& ctx) const override {
    const Tensor& w = ctx.input(1);
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& conv = prim_.get([&] { return kernels::ConvBackwardDataDnnl(geometry(w), eng); });
    kernels::DnnlCall call(eng, ctx.allocator());
    conv.run(call, ctx.input(0), w, ctx.output(0));
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& w = ctx.input(1);
    kernels::conv2d_backward_data_ref(geometry(w), ctx.input(0).data<float>(), w.data<float>(),
                                      ctx.output(0).data<float>());
  }

 private:
  kernels::Conv2dGeometry geometry(const Tensor& w) const {
    return kernels::conv2d_geometry(x_shape_, w.shape(), opts_);
  }

  ops::Conv2dOptions opts_;
  Shape x_shape_;
  kernels::OnceCell<kernels::ConvBackwardDataDnnl> prim_;
};

class Conv2dBackwardWeightsOp final : public Op {
 public:
  Conv2dBackwardWeightsOp(ops::Conv2dOptions opts, Shape w_shape)
      : opts_(opts), w_shape_(std::move(w_shape)) {}
  std::string_view name() const override { return "conv2d_backward_weights"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "x must be f32, got {}", in[0].to_string());
    check_dy(kernels::conv2d_geometry(in[0].shape, w_shape_, opts_), in[1]);
    return {{DType::f32, w_shape_}};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& conv = prim_.get([&] { return kernels::ConvBackwardWeightsDnnl(geometry(x), eng); });
    kernels::DnnlCall call(eng, ctx.allocator());
    conv.run(call, x, ctx.input(1), ctx.output(0));
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    kernels::conv2d_backward_weights_ref(geometry(x), x.data<float>(), ctx.input(1).data<float>(),
                                         ctx.output(0).data<float>());
  }

 private:
  kernels::Conv2dGeometry geometry(const Tensor& x) const {
    return kernels::conv2d_geometry(x.shape(), w_shape_, opts_);
  }

  ops::Conv2dOptions opts_;
  Shape w_shape_;
  kernels::OnceCell<kernels::ConvBackwardWeightsDnnl> prim_;
};

}  // namespace

Value ops::backward::conv2d_data(Graph& g, Value dy, Value w, Shape x_shape, Conv2dOptions opts) {
  return g.add1(std::make_shared<Conv2dBackwardDataOp>(opts, std::move(x_shape)), {dy, w});
}

Value ops::backward::conv2d_weights(Graph& g, Value x, Value dy, Shape w_shape,
                                    Conv2dOptions opts) {
  return g.add1(std::make_shared<Conv2dBackwardWeightsOp>(opts, std::move(w_shape)), {x, dy});
}

}  // namespace trib
