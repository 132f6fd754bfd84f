// batch_norm: normalises x over every axis but 1 (channels) with oneDNN's batch
// normalization. Training uses the batch's statistics and outputs them (biased variance);
// inference uses the running statistics and passes them through. Its backward op gives dx,
// dgamma and dbeta in one primitive.
#include <array>
#include <cmath>
#include <vector>

#include "engine/kernels/dnnl_call.h"
#include "engine/kernels/once_cell.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

// x viewed as [N, C, S], S the product of the spatial axes: the reference kernels need only
// these three. oneDNN gets [N, C, S, 1]: it has an optimised plain-layout kernel for 4 axes
// but falls back to its naive one for 3.
struct Layout {
  explicit Layout(const Shape& x) : n(x[0]), c(x[1]), s(x.numel() / std::max<std::int64_t>(1, n * c)) {}
  dnnl::memory::desc desc() const { return kernels::plain_desc(Shape{n, c, s, 1}); }
  std::int64_t n, c, s;
};

dnnl::normalization_flags flags_of(bool training) {
  auto f = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  return training ? f : f | dnnl::normalization_flags::use_global_stats;
}

dnnl::batch_normalization_forward::primitive_desc forward_pd(const Layout& l, float eps,
                                                             dnnl::prop_kind prop, bool training,
                                                             const dnnl::engine& eng) {
  dnnl::batch_normalization_forward::desc d(prop, l.desc(), eps, flags_of(training));
  return {d, kernels::cached_primitive_attr(), eng};
}

void check_inputs(std::span<const TensorSpec> in, std::size_t channel_inputs) {
  TRIB_CHECK(in[0].dtype == DType::f32 && in[0].shape.rank() >= 2, ShapeError,
             "batch_norm needs f32 x of rank >= 2, got {}", in[0].to_string());
  const TensorSpec channels{DType::f32, Shape{in[0].shape[1]}};
  for (std::size_t i = 1; i <= channel_inputs; ++i)
    TRIB_CHECK(in[i] == channels, ShapeError, "input {} must be {} (one per channel of x {}), got {}",
               i, channels.to_string(), in[0].to_string(), in[i].to_string());
}

// Per channel: sum over n and s of f(value index).
template <typename F>
double channel_sum(const Layout& l, std::int64_t c, F&& f) {
  double s = 0;
  for (std::int64_t n = 0; n < l.n; ++n)
    for (std::int64_t i = 0; i < l.s; ++i) s += f((n * l.c + c) * l.s + i);
  return s;
}

// Inputs (x, gamma, beta, running_mean, running_var) -> (y, batch_mean, batch_var).
class BatchNormOp final : public Op {
 public:
  explicit BatchNormOp(float eps) : eps_(eps) {}
  std::string_view name() const override { return "batch_norm"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    check_inputs(in, 4);
    return {in[0], in[1], in[1]};
  }
  void compute(KernelContext& ctx) const override {
    const bool training = ctx.training();
    if (!training) {
      ctx.set_output(1, ctx.input(3));
      ctx.set_output(2, ctx.input(4));
    }
    const Tensor& mean = training ? ctx.output(1) : ctx.input(3);
    const Tensor& var = training ? ctx.output(2) : ctx.input(4);
    Layout l(ctx.input(0).shape());
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& p = prims_[training].get([&] {
      auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
      return kernels::Primitive<dnnl::batch_normalization_forward>(
          forward_pd(l, eps_, prop, training, eng));
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    auto md = l.desc();
    auto cmd = kernels::plain_desc(Shape{l.c});
    call.run(p, {{DNNL_ARG_SRC, call.wrap(ctx.input(0), md)},
                 {DNNL_ARG_DST, call.wrap(ctx.output(0), md)},
                 {DNNL_ARG_SCALE, call.wrap(ctx.input(1), cmd)},
                 {DNNL_ARG_SHIFT, call.wrap(ctx.input(2), cmd)},
                 {DNNL_ARG_MEAN, call.wrap(mean, cmd)},
                 {DNNL_ARG_VARIANCE, call.wrap(var, cmd)}});
  }
  void reference(KernelContext& ctx) const override {
    const Layout l(ctx.input(0).shape());
    const float* x = ctx.input(0).data<float>();
    const float* gamma = ctx.input(1).data<float>();
    const float* beta = ctx.input(2).data<float>();
    float* y = ctx.output(0).data<float>();
    float* mean = ctx.output(1).data<float>();
    float* var = ctx.output(2).data<float>();
    const double count = double(l.n * l.s);
    for (std::int64_t c = 0; c < l.c; ++c) {
      double m = ctx.input(3).data<float>()[c], v = ctx.input(4).data<float>()[c];
      if (ctx.training()) {
        m = channel_sum(l, c, [&](std::int64_t i) { return double(x[i]); }) / count;
        v = channel_sum(l, c, [&](std::int64_t i) { return (x[i] - m) * (x[i] - m); }) / count;
      }
      mean[c] = static_cast<float>(m);
      var[c] = static_cast<float>(v);
      const double inv_std = 1.0 / std::sqrt(v + eps_);
      channel_sum(l, c, [&](std::int64_t i) {
        y[i] = static_cast<float>(gamma[c] * (x[i] - m) * inv_std + beta[c]);
        return 0.0;
      });
    }
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    TRIB_CHECK(!ctx.grad(1).valid() && !ctx.grad(2).valid(), InvalidArgument,
               "batch_norm '{}': its batch_mean and batch_var outputs are statistics for the "
               "running averages, not differentiable values; the loss must not depend on them",
               ctx.node.name);
    auto g = ops::backward::batch_norm(ctx.graph, ctx.grad(0), ctx.input(0), ctx.input(1),
                                       ctx.input(2), ctx.output(1), ctx.output(2), eps_);
    return {{g.dx, {}}, {g.dgamma, {}}, {g.dbeta, {}}, Gradient{}, Gradient{}};
  }

 private:
  float eps_;
  std::array<kernels::OnceCell<kernels::Primitive<dnnl::batch_normalization_forward>>, 2>
      prims_;  // [training]
};

// Inputs (dy, x, gamma, beta, mean, var) -> (dx, dgamma, dbeta). The gradient does not
// depend on beta, but oneDNN 2.6's backward primitive refuses to run without it.
class BatchNormBackwardOp final : public Op {
 public:
  explicit BatchNormBackwardOp(float eps) : eps_(eps) {}
  std::string_view name() const override { return "batch_norm_backward"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0] == in[1], ShapeError, "dy {} must match x {}", in[0].to_string(),
               in[1].to_string());
    check_inputs(in.subspan(1), 4);
    return {in[0], in[2], in[2]};
  }
  void compute(KernelContext& ctx) const override {
    const bool training = ctx.training();
    Layout l(ctx.input(0).shape());
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& p = prims_[training].get([&] {
      dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, l.desc(), l.desc(),
                                                 eps_, flags_of(training));
      auto hint = forward_pd(l, eps_, dnnl::prop_kind::forward_training, training, eng);
      return kernels::Primitive<dnnl::batch_normalization_backward>(
          {d, kernels::cached_primitive_attr(), eng, hint});
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    auto md = l.desc();
    auto cmd = kernels::plain_desc(Shape{l.c});
    call.run(p, {{DNNL_ARG_DIFF_DST, call.wrap(ctx.input(0), md)},
                 {DNNL_ARG_SRC, call.wrap(ctx.input(1), md)},
                 {DNNL_ARG_SCALE, call.wrap(ctx.input(2), cmd)},
                 {DNNL_ARG_SHIFT, call.wrap(ctx.input(3), cmd)},
                 {DNNL_ARG_MEAN, call.wrap(ctx.input(4), cmd)},
                 {DNNL_ARG_VARIANCE, call.wrap(ctx.input(5), cmd)},
                 {DNNL_ARG_DIFF_SRC, call.wrap(ctx.output(0), md)},
                 {DNNL_ARG_DIFF_SCALE, call.wrap(ctx.output(1), cmd)},
                 {DNNL_ARG_DIFF_SHIFT, call.wrap(ctx.output(2), cmd)}});
  }
  // Training: dx = gamma / std * (dy - mean(dy) - xhat * mean(dy * xhat)), since the batch
  // statistics depend on x. Inference: the statistics are constants, dx = gamma / std * dy.
  void reference(KernelContext& ctx) const override {
    const Layout l(ctx.input(0).shape());
    const float* dy = ctx.input(0).data<float>();
    const float* x = ctx.input(1).data<float>();
    const float* gamma = ctx.input(2).data<float>();
    float* dx = ctx.output(0).data<float>();
    float* dgamma = ctx.output(1).data<float>();
    float* dbeta = ctx.output(2).data<float>();
    const double count = double(l.n * l.s);
    for (std::int64_t c = 0; c < l.c; ++c) {
      const double m = ctx.input(4).data<float>()[c];
      const double inv_std = 1.0 / std::sqrt(double(ctx.input(5).data<float>()[c]) + eps_);
      auto xhat = [&](std::int64_t i) { return (x[i] - m) * inv_std; };
      const double sum_dy = channel_sum(l, c, [&](std::int64_t i) { return double(dy[i]); });
      const double sum_dy_xhat = channel_sum(l, c, [&](std::int64_t i) { return dy[i] * xhat(i); });
      dbeta[c] = static_cast<float>(sum_dy);
      dgamma[c] = static_cast<float>(sum_dy_xhat);
      channel_sum(l, c, [&](std::int64_t i) {
        double d = ctx.training() ? dy[i] - sum_dy / count - xhat(i) * sum_dy_xhat / count : dy[i];
        dx[i] = static_cast<float>(gamma[c] * inv_std * d);
        return 0.0;
      });
    }
  }

 private:
  float eps_;
  std::array<kernels::OnceCell<kernels::Primitive<dnnl::batch_normalization_backward>>, 2>
      prims_;  // [training]
};

}  // namespace

ops::BatchNormOutputs ops::batch_norm(Graph& g, Value x, Value gamma, Value beta,
                                      Value running_mean, Value running_var, float epsilon,
                                      const std::string& name) {
  TRIB_CHECK(epsilon > 0.0f, InvalidArgument, "batch_norm '{}': epsilon {} must be > 0",
             name.empty() ? "(unnamed)" : name, epsilon);
  auto out = g.add(std::make_shared<BatchNormOp>(epsilon),
                   {x, gamma, beta, running_mean, running_var}, name);
  return {out[0], out[1], out[2]};
}

ops::backward::BatchNormGrads ops::backward::batch_norm(Graph& g, Value dy, Value x, Value gamma,
                                                        Value beta, Value mean, Value var,
                                                        float epsilon) {
  auto out =
      g.add(std::make_shared<BatchNormBackwardOp>(epsilon), {dy, x, gamma, beta, mean, var});
  return {out[0], out[1], out[2]};
}

}  // namespace trib
