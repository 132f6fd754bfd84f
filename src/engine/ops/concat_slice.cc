// concat and slice, each other's gradient (with slice_grad, which writes a slice's gradient
// into zeros of the input's shape). Any dtype: autodiff concatenates i64 row indices of
// sparse gradients. Elements are only moved, so the fast kernels copy whole runs of bytes.
#include <cstring>

#include "engine/kernels/parallel.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

std::int64_t product(const std::vector<std::int64_t>& dims, int from, int to) {
  std::int64_t p = 1;
  for (int i = from; i < to; ++i) p *= dims[i];
  return p;
}

// Copies between the box [begin, begin + size) of a row-major tensor `big` and a contiguous
// tensor `small` of shape `size`, in the direction `to_small`. Trailing axes taken whole
// merge into one run, so a box of whole rows is one memcpy per row block.
void copy_box(std::byte* big, const Shape& big_shape, std::byte* small,
              const std::vector<std::int64_t>& begin, const std::vector<std::int64_t>& size,
              std::size_t elem, bool to_small, int threads) {
  const int rank = big_shape.rank();
  const auto& dims = big_shape.dims();
  const std::vector<std::int64_t> strides = big_shape.strides();
  int j = rank - 1;  // innermost axis not taken whole; the run starts there
  while (j > 0 && begin[j] == 0 && size[j] == dims[j]) --j;
  const std::int64_t run = rank == 0 ? 1 : size[j] * product(dims, j + 1, rank);
  const std::int64_t base = rank == 0 ? 0 : begin[j] * strides[j];
  const std::int64_t rows = product(size, 0, std::max(j, 0));
  if (rows * run == 0) return;
  kernels::parallel_for(rows, threads, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      std::int64_t off = base;
      for (std::int64_t a = j - 1, rest = r; a >= 0; --a) {
        off += (begin[a] + rest % size[a]) * strides[a];
        rest /= size[a];
      }
      std::byte* pb = big + off * elem;
      std::byte* ps = small + r * run * elem;
      if (to_small) std::memcpy(ps, pb, run * elem);
      else std::memcpy(pb, ps, run * elem);
    }
  }, run * static_cast<std::int64_t>(elem) / 4);
}

// The naive version: one element at a time, each coordinate computed from scratch.
void copy_box_reference(std::byte* big, const Shape& big_shape, std::byte* small,
                        const std::vector<std::int64_t>& begin, const Shape& box, std::size_t elem,
                        bool to_small) {
  const std::vector<std::int64_t> strides = big_shape.strides();
  for (std::int64_t i = 0; i < box.numel(); ++i) {
    std::int64_t rest = i, off = 0;
    for (int a = box.rank() - 1; a >= 0; --a) {
      off += (begin[a] + rest % box.dims()[a]) * strides[a];
      rest /= box.dims()[a];
    }
    if (to_small) std::memcpy(small + i * elem, big + off * elem, elem);
    else std::memcpy(big + off * elem, small + i * elem, elem);
  }
}

std::byte* bytes(const Tensor& t) { return static_cast<std::byte*>(t.raw_data()); }

class ConcatOp final : public Op {
 public:
  explicit ConcatOp(int axis) : axis_(axis) {}
  std::string_view name() const override { return "concat"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    TRIB_CHECK(!in.empty(), ShapeError, "concat needs at least one input");
    const TensorSpec& first = in[0];
    TRIB_CHECK(first.shape.rank() >= 1, ShapeError, "concat needs inputs with at least one axis");
    const int axis = first.shape.normalize_axis(axis_);
    std::vector<std::int64_t> dims = first.shape.dims();
    dims[axis] = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      bool fits = in[i].dtype == first.dtype && in[i].shape.rank() == first.shape.rank();
      for (int a = 0; fits && a < first.shape.rank(); ++a)
        fits = a == axis || in[i].shape.dims()[a] == first.shape.dims()[a];
      TRIB_CHECK(fits, ShapeError, "input {} is {} but input 0 is {}: they must agree except along axis {}",
                 i, in[i].to_string(), first.to_string(), axis);
      dims[axis] += in[i].shape.dims()[axis];
    }
    return {{first.dtype, Shape(std::move(dims))}};
  }

  void compute(KernelContext& ctx) const override {
    Tensor& y = ctx.output(0);
    const int axis = y.shape().normalize_axis(axis_);
    const std::size_t elem = dtype_size(y.dtype());
    const std::int64_t outer = product(y.shape().dims(), 0, axis);
    const std::int64_t inner = product(y.shape().dims(), axis + 1, y.shape().rank());
    const std::int64_t row = y.shape().dims()[axis] * inner * static_cast<std::int64_t>(elem);
    if (outer * row == 0) return;
    // Each output row is the inputs' rows side by side.
    kernels::parallel_for(outer, ctx.intra_op_threads(), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t o = b; o < e; ++o) {
        std::byte* dst = bytes(y) + o * row;
        for (int i = 0; i < ctx.num_inputs(); ++i) {
          const Tensor& x = ctx.input(i);
          const std::int64_t chunk = x.shape().dims()[axis] * inner * static_cast<std::int64_t>(elem);
          std::memcpy(dst, bytes(x) + o * chunk, chunk);
          dst += chunk;
        }
      }
    }, row / 4);
  }

  void reference(KernelContext& ctx) const override {
    Tensor& y = ctx.output(0);
    const int axis = y.shape().normalize_axis(axis_);
    std::vector<std::int64_t> begin(y.shape().rank(), 0);
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      copy_box_reference(bytes(y), y.shape(), bytes(x), begin, x.shape(), dtype_size(x.dtype()), false);
      begin[axis] += x.shape().dims()[axis];
    }
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    std::vector<Gradient> grads;
    const int axis = ctx.input_spec(0).shape.normalize_axis(axis_);
    std::vector<std::int64_t> begin(ctx.input_spec(0).shape.rank(), 0);
    for (std::size_t i = 0; i < ctx.node.inputs.size(); ++i) {
      const TensorSpec& s = ctx.input_spec(static_cast<int>(i));
      Gradient dx;  // none for integer inputs
      if (s.dtype == DType::f32) dx.values = ops::slice(ctx.graph, ctx.grad(), begin, s.shape.dims());
      grads.push_back(dx);
      begin[axis] += s.shape.dims()[axis];
    }
    return grads;
  }

 private:
  int axis_;
};

// Zeros of the sliced input's shape with the output gradient in the slice's box.
class SliceGradOp final : public Op {
 public:
  SliceGradOp(Shape input_shape, std::vector<std::int64_t> begin)
      : input_shape_(std::move(input_shape)), begin_(std::move(begin)) {}
  std::string_view name() const override { return "slice_grad"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    return {{in[0].dtype, input_shape_}};
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    Tensor& dx = ctx.output_zeros(0);
    copy_box(bytes(dx), dx.shape(), bytes(dy), begin_, dy.shape().dims(), dtype_size(dy.dtype()), false,
             ctx.intra_op_threads());
  }
  void reference(KernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    Tensor& dx = ctx.output_zeros(0);
    copy_box_reference(bytes(dx), dx.shape(), bytes(dy), begin_, dy.shape(), dtype_size(dy.dtype()), false);
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {{ops::slice(ctx.graph, ctx.grad(), begin_, ctx.input_spec(0).shape.dims()), {}}};
  }

 private:
  Shape input_shape_;
  std::vector<std::int64_t> begin_;
};

class SliceOp final : public Op {
 public:
  SliceOp(std::vector<std::int64_t> begin, std::vector<std::int64_t> size)
      : begin_(std::move(begin)), size_(std::move(size)) {}
  std::string_view name() const override { return "slice"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    const Shape& s = in[0].shape;
    TRIB_CHECK(static_cast<int>(begin_.size()) == s.rank() && static_cast<int>(size_.size()) == s.rank(),
               ShapeError, "begin and size need one entry per axis of the rank-{} input, got {} and {}",
               s.rank(), begin_.size(), size_.size());
    for (int a = 0; a < s.rank(); ++a)
      TRIB_CHECK(begin_[a] >= 0 && size_[a] >= 0 && begin_[a] + size_[a] <= s.dims()[a], ShapeError,
                 "axis {}: elements [{}, {}) are outside [0, {})", a, begin_[a], begin_[a] + size_[a],
                 s.dims()[a]);
    return {{in[0].dtype, Shape(size_)}};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    copy_box(bytes(x), x.shape(), bytes(ctx.output(0)), begin_, size_, dtype_size(x.dtype()), true,
             ctx.intra_op_threads());
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    copy_box_reference(bytes(x), x.shape(), bytes(y), begin_, y.shape(), dtype_size(x.dtype()), true);
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    if (ctx.input_spec(0).dtype != DType::f32) return {};
    auto op = std::make_shared<SliceGradOp>(ctx.input_spec(0).shape, begin_);
    return {{ctx.graph.add1(std::move(op), {ctx.grad()}), {}}};
  }

 private:
  std::vector<std::int64_t> begin_, size_;
};

}  // namespace

Value ops::concat(Graph& g, std::vector<Value> xs, int axis, const std::string& name) {
  return g.add1(std::make_shared<ConcatOp>(axis), std::move(xs), name);
}

Value ops::slice(Graph& g, Value x, std::vector<std::int64_t> begin, std::vector<std::int64_t> size,
                 const std::string& name) {
  return g.add1(std::make_shared<SliceOp>(std::move(begin), std::move(size)), {x}, name);
}

}  // namespace trib
