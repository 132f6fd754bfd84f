// sum and mean over a set of axes (all when none are given), with or without keepdims.
// The gradient spreads the output gradient back over the reduced axes with broadcast_to.
#include <algorithm>

#include "engine/kernels/reduce_sum.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

class ReduceOp final : public Op {
 public:
  ReduceOp(std::vector<int> axes, bool keepdims, bool mean)
      : axes_(std::move(axes)), keepdims_(keepdims), mean_(mean) {}
  std::string_view name() const override { return mean_ ? "mean" : "sum"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].dtype == DType::f32, ShapeError, "{} needs f32, got {}", name(), in[0].to_string());
    const Shape& s = in[0].shape;
    std::vector<bool> reduce = reduced_axes(s);
    std::vector<std::int64_t> dims;
    for (int a = 0; a < s.rank(); ++a) {
      if (!reduce[a]) dims.push_back(s.dims()[a]);
      else if (keepdims_) dims.push_back(1);
    }
    return {{DType::f32, Shape(std::move(dims))}};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::vector<bool> reduce = reduced_axes(x.shape());
    kernels::sum_axes(x.data<float>(), x.shape(), reduce, ctx.output(0).data<float>(),
                      factor(x.shape(), reduce), ctx.intra_op_threads());
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::vector<bool> reduce = reduced_axes(x.shape());
    kernels::sum_axes_reference(x.data<float>(), x.shape(), reduce, ctx.output(0).data<float>(),
                                factor(x.shape(), reduce));
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    Graph& g = ctx.graph;
    const Shape& in = ctx.input_spec(0).shape;
    const std::vector<bool> reduce = reduced_axes(in);
    // The output gradient with the reduced axes put back as 1s, then repeated along them.
    std::vector<std::int64_t> kept_dims;
    for (int a = 0; a < in.rank(); ++a) kept_dims.push_back(reduce[a] ? 1 : in.dims()[a]);
    Shape kept(std::move(kept_dims));
    Value dy = ctx.grad();
    if (g.spec(dy).shape != kept) dy = ops::reshape(g, dy, kept);
    const float f = factor(in, reduce);
    if (f != 1.0f) dy = ops::scale(g, dy, f);  // on the small side, before repeating it
    return {{ops::broadcast_to(g, dy, in), {}}};
  }

 private:
  // One flag per axis of `s`; throws on an axis out of range or given twice.
  std::vector<bool> reduced_axes(const Shape& s) const {
    std::vector<bool> reduce(s.rank(), axes_.empty());
    for (int axis : axes_) {
      const int a = s.normalize_axis(axis);
      TRIB_CHECK(!reduce[a], ShapeError, "axis {} is given twice", axis);
      reduce[a] = true;
    }
    return reduce;
  }

  // 1 for a sum; 1/count for a mean (0 when nothing is averaged, where the result is 0 anyway).
  float factor(const Shape& s, const std::vector<bool>& reduce) const {
    if (!mean_) return 1.0f;
    std::int64_t count = 1;
    for (int a = 0; a < s.rank(); ++a)
      if (reduce[a]) count *= s.dims()[a];
    return count == 0 ? 0.0f : 1.0f / static_cast<float>(count);
  }

  std::vector<int> axes_;
  bool keepdims_;
  bool mean_;
};

}  // namespace

Value ops::sum(Graph& g, Value x, std::vector<int> axes, bool keepdims, const std::string& name) {
  return g.add1(std::make_shared<ReduceOp>(std::move(axes), keepdims, false), {x}, name);
}

Value ops::mean(Graph& g, Value x, std::vector<int> axes, bool keepdims, const std::string& name) {
  return g.add1(std::make_shared<ReduceOp>(std::move(axes), keepdims, true), {x}, name);
}

}  // namespace trib
