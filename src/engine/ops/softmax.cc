// softmax and log_softmax over the last axis (oneDNN's softmax_v2), and their backward op,
// which reads the forward output.
#include <array>
#include <cmath>

#include "engine/kernels/dnnl_call.h"
#include "engine/kernels/once_cell.h"
#include "engine/ops/nn_backward.h"
#include "trib/engine/context.h"
#include "trib/engine/op.h"

namespace trib {
namespace {

dnnl::algorithm algorithm_of(bool log) {
  return log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
}

int last_axis(const Shape& s) { return s.rank() == 0 ? 0 : s.rank() - 1; }

dnnl::softmax_v2_forward::primitive_desc forward_pd(bool log, const Shape& s, bool training,
                                                    const dnnl::engine& eng) {
  auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  auto md = kernels::plain_desc(s);
  dnnl::softmax_v2_forward::desc d(prop, algorithm_of(log), md, md, last_axis(s));
  return {d, kernels::cached_primitive_attr(), eng};
}

// Rows of the last axis: how the reference kernels walk the tensor.
struct Rows {
  explicit Rows(const Shape& s) : len(s.rank() == 0 ? 1 : s[-1]), count(len ? s.numel() / len : 0) {}
  std::int64_t len, count;
};

class SoftmaxOp final : public Op {
 public:
  explicit SoftmaxOp(bool log) : log_(log) {}
  std::string_view name() const override { return log_ ? "log_softmax" : "softmax"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32 && in[0].shape.rank() >= 1, ShapeError,
               "{} needs f32 of rank >= 1, got {}", name(), in[0].to_string());
    return {in[0]};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (x.numel() == 0) return;
    const auto& eng = ctx.engine().dnnl_engine();
    const auto& p = prims_[ctx.training()].get([&] {
      return kernels::Primitive<dnnl::softmax_v2_forward>(
          forward_pd(log_, x.shape(), ctx.training(), eng));
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    auto md = kernels::plain_desc(x.shape());
    call.run(p, {{DNNL_ARG_SRC, call.wrap(x, md)}, {DNNL_ARG_DST, call.wrap(y, md)}});
  }
  void reference(KernelContext& ctx) const override {
    const float* x = ctx.input(0).data<float>();
    float* y = ctx.output(0).data<float>();
    Rows rows(ctx.input(0).shape());
    for (std::int64_t r = 0; r < rows.count; ++r) {
      const float* xr = x + r * rows.len;
      float* yr = y + r * rows.len;
      double mx = xr[0], sum = 0;
      for (std::int64_t i = 0; i < rows.len; ++i) mx = std::max<double>(mx, xr[i]);
      for (std::int64_t i = 0; i < rows.len; ++i) sum += std::exp(xr[i] - mx);
      for (std::int64_t i = 0; i < rows.len; ++i)
        yr[i] = static_cast<float>(log_ ? xr[i] - mx - std::log(sum) : std::exp(xr[i] - mx) / sum);
    }
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::backward::softmax(ctx.graph, ctx.grad(), ctx.output(0), log_), {}}};
  }

 private:
  bool log_;
  std::array<kernels::OnceCell<kernels::Primitive<dnnl::softmax_v2_forward>>, 2> prims_;  // [training]
};

// Inputs (dy, y). softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy).
class SoftmaxBackwardOp final : public Op {
 public:
  explicit SoftmaxBackwardOp(bool log) : log_(log) {}
  std::string_view name() const override {
    return log_ ? "log_softmax_backward" : "softmax_backward";
  }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0] == in[1] && in[0].dtype == DType::f32 && in[0].shape.rank() >= 1, ShapeError,
               "{} needs dy and y of one f32 spec", name());
    return {in[0]};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    const Tensor& y = ctx.input(1);
    Tensor& dx = ctx.output(0);
    if (dy.numel() == 0) return;
    const auto& eng = ctx.engine().dnnl_engine();
    auto md = kernels::plain_desc(dy.shape());
    const auto& p = prim_.get([&] {
      dnnl::softmax_v2_backward::desc d(algorithm_of(log_), md, md, md, last_axis(dy.shape()));
      return kernels::Primitive<dnnl::softmax_v2_backward>(
          {d, kernels::cached_primitive_attr(), eng, forward_pd(log_, dy.shape(), true, eng)});
    });
    kernels::DnnlCall call(ctx.engine(), ctx.allocator());
    call.run(p, {{DNNL_ARG_DST, call.wrap(y, md)},
                 {DNNL_ARG_DIFF_DST, call.wrap(dy, md)},
                 {DNNL_ARG_DIFF_SRC, call.wrap(dx, md)}});
  }
  void reference(KernelContext& ctx) const override {
    const float* dy = ctx.input(0).data<float>();
    const float* y = ctx.input(1).data<float>();
    float* dx = ctx.output(0).data<float>();
    Rows rows(ctx.input(0).shape());
    for (std::int64_t r = 0; r < rows.count; ++r) {
      std::int64_t o = r * rows.len;
      double s = 0;
      for (std::int64_t i = 0; i < rows.len; ++i) s += log_ ? dy[o + i] : double(dy[o + i]) * y[o + i];
      for (std::int64_t i = 0; i < rows.len; ++i)
        dx[o + i] = static_cast<float>(log_ ? dy[o + i] - std::exp(double(y[o + i])) * s
                                            : y[o + i] * (dy[o + i] - s));
    }
  }

 private:
  bool log_;
  kernels::OnceCell<kernels::Primitive<dnnl::softmax_v2_backward>> prim_;
};

}  // namespace

Value ops::softmax(Graph& g, Value x, const std::string& name) {
  return g.add1(std::make_shared<SoftmaxOp>(false), {x}, name);
}

Value ops::log_softmax(Graph& g, Value x, const std::string& name) {
  return g.add1(std::make_shared<SoftmaxOp>(true), {x}, name);
}

Value ops::backward::softmax(Graph& g, Value dy, Value y, bool log) {
  return g.add1(std::make_shared<SoftmaxBackwardOp>(log), {dy, y});
}

}  // namespace trib
