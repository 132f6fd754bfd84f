// relu, sigmoid and tanh: oneDNN eltwise primitives run in place over the whole tensor, and
// one backward op for all three that reads the activation's output.
#include <array>
#include <cmath>

#include "engine/kernels/dnnl_call.h"
#include "engine/kernels/desc_cache.h"
#include "engine/ops/fusion.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

using ops::backward::Activation;

// The use_dst_for_bwd variants compute the same forward values and let the backward
// primitive read y instead of x, which the in-place forward has overwritten.
dnnl::algorithm algorithm_of(Activation kind) {
  switch (kind) {
    case Activation::relu: return dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    case Activation::sigmoid: return dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
    case Activation::tanh: return dnnl::algorithm::eltwise_tanh_use_dst_for_bwd;
  }
  return dnnl::algorithm::undef;
}

float forward_ref(Activation kind, float x) {
  switch (kind) {
    case Activation::relu: return x > 0.0f ? x : 0.0f;
    case Activation::sigmoid: return static_cast<float>(1.0 / (1.0 + std::exp(-double(x))));
    case Activation::tanh: return static_cast<float>(std::tanh(double(x)));
  }
  return 0.0f;
}

float backward_ref(Activation kind, float dy, float y) {
  switch (kind) {
    case Activation::relu: return y > 0.0f ? dy : 0.0f;
    case Activation::sigmoid: return dy * y * (1.0f - y);
    case Activation::tanh: return dy * (1.0f - y * y);
  }
  return 0.0f;
}

// Element-wise primitives ignore shape, so a plain tensor is described as one flat vector;
// one in a blocked layout keeps its descriptor (whose padding oneDNN then leaves alone).
dnnl::memory::desc desc_for(const LayoutPtr& layout, const Shape& s) {
  return layout ? layout->desc() : kernels::plain_desc(Shape{s.numel()});
}

dnnl::eltwise_forward::primitive_desc forward_pd(Activation kind, const dnnl::memory::desc& md,
                                                 bool training, const dnnl::engine& eng) {
  auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::eltwise_forward::desc d(prop, algorithm_of(kind), md, 0.0f, 0.0f);
  return {d, kernels::cached_primitive_attr(), eng};
}

std::vector<TensorSpec> same_f32(std::string_view op, std::span<const TensorSpec> in) {
  for (const TensorSpec& s : in)
    TRIB_CHECK(s.dtype == DType::f32 && s.shape == in[0].shape, ShapeError,
               "{} needs f32 inputs of one shape, got {}", op, s.to_string());
  return {in[0]};
}

class ActivationOp final : public Op {
 public:
  explicit ActivationOp(Activation kind) : kind_(kind) {}
  std::string_view name() const override {
    switch (kind_) {
      case Activation::relu: return "relu";
      case Activation::sigmoid: return "sigmoid";
      case Activation::tanh: return "tanh";
    }
    return "activation";
  }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    return same_f32(name(), in);
  }
  bool accepts_layout(int) const override { return true; }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output_reusing(0, 0);  // in x's layout
    if (ctx.input_spec(0).shape.numel() == 0) return;
    const auto& eng = ctx.engine().dnnl_engine();
    const auto md = desc_for(ctx.input_layout(0), ctx.input_spec(0).shape);
    const auto& p = prims_[ctx.training()].get(md, [&] {
      return kernels::Primitive<dnnl::eltwise_forward>(forward_pd(kind_, md, ctx.training(), eng));
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    call.run(p, {{DNNL_ARG_SRC, call.wrap(x, md)}, {DNNL_ARG_DST, call.wrap(y, md)}});
  }
  void reference(KernelContext& ctx) const override {
    const float* x = ctx.input(0).data<float>();
    float* y = ctx.output(0).data<float>();
    for (std::int64_t i = 0; i < ctx.input(0).numel(); ++i) y[i] = forward_ref(kind_, x[i]);
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::backward::activation(ctx.graph, kind_, ctx.grad(), ctx.output(0)), {}}};
  }

 private:
  Activation kind_;
  std::array<kernels::DescCache<kernels::Primitive<dnnl::eltwise_forward>>, 2> prims_;  // [training]
};

// Inputs (dy, y), in any layouts; dx comes out in y's layout, overwriting dy when nothing
// else reads it and it is already in that layout.
class ActivationBackwardOp final : public Op {
 public:
  explicit ActivationBackwardOp(Activation kind) : kind_(kind) {}
  std::string_view name() const override { return "activation_backward"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    return same_f32(name(), in);
  }
  bool accepts_layout(int) const override { return true; }
  void compute(KernelContext& ctx) const override {
    const Shape& shape = ctx.input_spec(0).shape;
    if (shape.numel() == 0) {
      ctx.output(0);
      return;
    }
    const LayoutPtr& layout = ctx.input_layout(1);
    const bool same = kernels::same_layout(ctx.input_layout(0).get(), layout.get());
    // dy converts to y's layout when they differ, which needs both described with the
    // tensor's real dimensions rather than as flat vectors.
    auto full = [&](const LayoutPtr& l) { return l ? l->desc() : kernels::plain_desc(shape); };
    const auto md = same ? desc_for(layout, shape) : full(layout);
    const auto dy_md = same ? md : full(ctx.input_layout(0));
    Tensor& dx = same ? ctx.output_reusing(0, 0) : ctx.output_in_layout(0, layout);
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& p = prims_.get(md, [&] {
      dnnl::eltwise_backward::desc d(algorithm_of(kind_), md, md, 0.0f, 0.0f);
      return kernels::Primitive<dnnl::eltwise_backward>(
          {d, kernels::cached_primitive_attr(), eng, forward_pd(kind_, md, true, eng)});
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    call.run(p, {{DNNL_ARG_DST, call.wrap(ctx.input(1), md)},
                 {DNNL_ARG_DIFF_DST, call.input(ctx.input(0), dy_md, md)},
                 {DNNL_ARG_DIFF_SRC, call.wrap(dx, md)}});
  }
  void reference(KernelContext& ctx) const override {
    const float* dy = ctx.input(0).data<float>();
    const float* y = ctx.input(1).data<float>();
    float* dx = ctx.output(0).data<float>();
    for (std::int64_t i = 0; i < ctx.input(0).numel(); ++i) dx[i] = backward_ref(kind_, dy[i], y[i]);
  }

 private:
  Activation kind_;
  kernels::DescCache<kernels::Primitive<dnnl::eltwise_backward>> prims_;
};

}  // namespace

Value ops::relu(Graph& g, Value x, const std::string& name) {
  // After a convolution or matmul (with or without its bias): one fused node (fusion.h).
  if (const Fusable* f = fusable_producer(g, x))
    if (auto fused = f->fuse_relu(g, Node(g.node(x)), name)) return *fused;
  return g.add1(std::make_shared<ActivationOp>(Activation::relu), {x}, name);
}

Value ops::sigmoid(Graph& g, Value x, const std::string& name) {
  return g.add1(std::make_shared<ActivationOp>(Activation::sigmoid), {x}, name);
}

Value ops::tanh(Graph& g, Value x, const std::string& name) {
  return g.add1(std::make_shared<ActivationOp>(Activation::tanh), {x}, name);
}

Value ops::backward::activation(Graph& g, Activation kind, Value dy, Value y) {
  return g.add1(std::make_shared<ActivationBackwardOp>(kind), {dy, y});
}

}  // namespace trib
