// reshape and flatten: the same elements under another shape. The fast kernel is a view
// over the input's storage (no copy); the reference copies, so tests compare real data.
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

class ReshapeOp final : public Op {
 public:
  ReshapeOp(Shape shape, std::string_view name) : shape_(std::move(shape)), name_(name) {}
  std::string_view name() const override { return name_; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(in[0].shape.numel() == shape_.numel(), ShapeError,
               "cannot reshape {} ({} elements) to {} ({} elements)", in[0].shape.to_string(),
               in[0].shape.numel(), shape_.to_string(), shape_.numel());
    return {{in[0].dtype, shape_}};
  }

  void compute(KernelContext& ctx) const override { ctx.set_output(0, ctx.input(0).reshape(shape_)); }
  void reference(KernelContext& ctx) const override { ctx.output(0).copy_from(ctx.input(0)); }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    if (ctx.input_spec(0).dtype != DType::f32) return {};
    return {{ops::reshape(ctx.graph, ctx.grad(), ctx.input_spec(0).shape), {}}};
  }

 private:
  Shape shape_;
  std::string_view name_;  // "reshape" or "flatten": both are this op
};

}  // namespace

Value ops::reshape(Graph& g, Value x, Shape shape, const std::string& name) {
  return g.add1(std::make_shared<ReshapeOp>(std::move(shape), "reshape"), {x}, name);
}

Value ops::flatten(Graph& g, Value x, const std::string& name) {
  const Shape& s = g.spec(x).shape;
  TRIB_CHECK(s.rank() >= 1, ShapeError, "flatten of {} needs at least one axis (the batch), got {}",
             g.describe(x), s.to_string());
  const std::int64_t n = s.dims()[0];
  std::int64_t rest = 1;  // a product, not numel / n, which an empty batch would break
  for (int a = 1; a < s.rank(); ++a) rest *= s.dims()[a];
  return g.add1(std::make_shared<ReshapeOp>(Shape{n, rest}, "flatten"), {x}, name);
}

}  // namespace trib
