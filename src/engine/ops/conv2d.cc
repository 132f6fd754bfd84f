// conv2d: x [N, C, H, W] * w [O, C, KH, KW] -> y [N, O, OH, OW], by oneDNN (kernels/conv_dnnl)
// with a naive reference (kernels/conv_ref). Its gradients are the two backward ops in
// conv2d_backward.cc.
#include <array>

#include "engine/kernels/conv_dnnl.h"
#include "engine/kernels/conv_ref.h"
#include "engine/kernels/once_cell.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

class Conv2dOp final : public Op {
 public:
  explicit Conv2dOp(ops::Conv2dOptions opts) : opts_(opts) {}
  std::string_view name() const override { return "conv2d"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[1].dtype == DType::f32, ShapeError,
               "conv2d needs f32 x and w, got {} and {}", in[0].to_string(), in[1].to_string());
    return {{DType::f32, kernels::conv2d_geometry(in[0].shape, in[1].shape, opts_).y_shape()}};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& conv = forward_[ctx.training()].get([&] {
      return kernels::ConvForwardDnnl(geometry(x, w), ctx.training(), eng);
    });
    kernels::DnnlCall call(eng, ctx.allocator());
    conv.run(call, x, w, ctx.output(0));
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    kernels::conv2d_forward_ref(geometry(x, w), x.data<float>(), w.data<float>(),
                                ctx.output(0).data<float>());
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    Value dx = ops::backward::conv2d_data(ctx.graph, ctx.grad(), ctx.input(1),
                                          ctx.input_spec(0).shape, opts_);
    Value dw = ops::backward::conv2d_weights(ctx.graph, ctx.input(0), ctx.grad(),
                                             ctx.input_spec(1).shape, opts_);
    return {{dx, {}}, {dw, {}}};
  }

 private:
  kernels::Conv2dGeometry geometry(const Tensor& x, const Tensor& w) const {
    return kernels::conv2d_geometry(x.shape(), w.shape(), opts_);
  }

  ops::Conv2dOptions opts_;
  std::array<kernels::OnceCell<kernels::ConvForwardDnnl>, 2> forward_;  // [training]
};

}  // namespace

Value ops::conv2d(Graph& g, Value x, Value w, Conv2dOptions opts, const std::string& name) {
  return g.add1(std::make_shared<Conv2dOp>(opts), {x, w}, name);
}

}  // namespace trib
