// transpose: permutes axes (output axis i is input axis perm[i]); any dtype, since elements
// are only moved. The fast kernel first merges axes that stay adjacent, then picks one of
// three copies: whole rows when the innermost axis stays innermost, cache-sized tiles when
// the innermost two axes swap (a matrix transpose, possibly batched), a strided gather else.
#include <array>
#include <cstring>

#include "engine/kernels/once_cell.h"
#include "engine/kernels/strided_loop.h"
#include "trib/engine/op.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

// Output axes after merging, each with its stride in the input. The output is contiguous.
struct TransposePlan {
  std::vector<std::int64_t> dims, src;
};

TransposePlan plan_transpose(const Shape& in, const std::vector<int>& perm) {
  const std::vector<std::int64_t> strides = in.strides();
  TransposePlan p;
  for (int axis : perm) {
    const std::int64_t d = in.dims()[axis], s = strides[axis];
    if (d == 1) continue;
    if (!p.dims.empty() && p.src.back() == s * d) {  // adjacent in the input too
      p.dims.back() *= d;
      p.src.back() = s;
    } else {
      p.dims.push_back(d);
      p.src.push_back(s);
    }
  }
  if (p.dims.empty()) p = {{1}, {1}};
  return p;
}

// Rows [a0, a1) of out [A, B] from x, which steps 1 along A and src_b along B, in 32x32
// tiles so that both the lines read and the lines written stay in cache. A function of
// plain values so the compiler keeps every bound in a register.
template <typename T>
void transpose_rows(const T* x, T* out, std::int64_t a0, std::int64_t a1, std::int64_t b_dim,
                    std::int64_t src_b) {
  constexpr std::int64_t kTile = 32;
  for (std::int64_t b0 = 0; b0 < b_dim; b0 += kTile) {
    const std::int64_t b1 = std::min(b_dim, b0 + kTile);
    for (std::int64_t a = a0; a < a1; ++a)
      for (std::int64_t b = b0; b < b1; ++b) out[a * b_dim + b] = x[a + b * src_b];
  }
}

// [batch..., A, B] with the input stepping 1 along A: a batch of matrix transposes.
template <typename T>
void transpose_tiled(const T* x, T* y, const TransposePlan& p, int threads) {
  constexpr std::int64_t kTile = 32;
  const int r = static_cast<int>(p.dims.size());
  const std::int64_t a_dim = p.dims[r - 2], b_dim = p.dims[r - 1], src_b = p.src[r - 1];
  const std::int64_t a_tiles = (a_dim + kTile - 1) / kTile;
  const std::int64_t batches = [&] {
    std::int64_t n = 1;
    for (int i = 0; i < r - 2; ++i) n *= p.dims[i];
    return n;
  }();
  kernels::parallel_for(batches * a_tiles, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t item = begin; item < end; ++item) {
      const std::int64_t batch = item / a_tiles;
      const std::int64_t a0 = (item % a_tiles) * kTile, a1 = std::min(a_dim, a0 + kTile);
      T* out = y + batch * a_dim * b_dim;
      std::int64_t src0 = 0;
      for (std::int64_t i = r - 3, rest = batch; i >= 0; --i) {
        src0 += (rest % p.dims[i]) * p.src[i];
        rest /= p.dims[i];
      }
      transpose_rows(x + src0, out, a0, a1, b_dim, src_b);
    }
  }, kTile * b_dim);
}

template <typename T>
void transpose_fast(const T* x, T* y, std::int64_t numel, const TransposePlan& p, int threads) {
  const int r = static_cast<int>(p.dims.size());
  if (r == 1) {  // the permutation only moved size-1 axes
    std::memcpy(y, x, numel * sizeof(T));
    return;
  }
  if (p.src[r - 2] == 1) return transpose_tiled(x, y, p, threads);
  const kernels::StridedLoop loop{p.dims, {p.src}};
  const std::int64_t step = p.src.back();
  auto copy_run = [&](std::int64_t o, const kernels::Offsets<1>& off, std::int64_t n) {
    if (step == 1) {
      std::memcpy(y + o, x + off[0], n * sizeof(T));
    } else {
      for (std::int64_t i = 0; i < n; ++i) y[o + i] = x[off[0] + i * step];
    }
  };
  kernels::for_each_run<1>(loop, threads, copy_run);
}

template <typename T>
void transpose_reference(const T* x, T* y, const Shape& in, const Shape& out, const std::vector<int>& perm) {
  const std::vector<std::int64_t> in_strides = in.strides();
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    std::int64_t rest = i, src = 0;
    for (int a = out.rank() - 1; a >= 0; --a) {
      src += (rest % out.dims()[a]) * in_strides[perm[a]];
      rest /= out.dims()[a];
    }
    y[i] = x[src];
  }
}

// Elements are only moved, so dtypes of one size share a kernel: f gets a zero of the
// unsigned integer type of the dtype's size.
template <typename F>
void by_element_size(DType dtype, F&& f) {
  if (dtype_size(dtype) == 4) f(std::uint32_t{0});
  else f(std::uint64_t{0});
}

class TransposeOp final : public Op {
 public:
  explicit TransposeOp(std::vector<int> perm) : perm_(std::move(perm)) {}
  std::string_view name() const override { return "transpose"; }

  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    const Shape& s = in[0].shape;
    TRIB_CHECK(static_cast<int>(perm_.size()) == s.rank(), ShapeError,
               "perm has {} axes for a rank-{} input", perm_.size(), s.rank());
    std::vector<bool> seen(s.rank(), false);
    std::vector<std::int64_t> dims;
    for (int axis : perm_) {
      TRIB_CHECK(axis >= 0 && axis < s.rank() && !seen[axis], ShapeError,
                 "perm must list each axis 0..{} once; axis {} is out of range or repeated",
                 s.rank() - 1, axis);
      seen[axis] = true;
      dims.push_back(s.dims()[axis]);
    }
    return {{in[0].dtype, Shape(std::move(dims))}};
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const TransposePlan& p = plan_.get([&] { return plan_transpose(x.shape(), perm_); });
    Tensor& y = ctx.output(0);
    if (y.numel() == 0) return;
    by_element_size(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      transpose_fast(static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), y.numel(), p,
                     ctx.intra_op_threads());
    });
  }

  void reference(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    by_element_size(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      transpose_reference(static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), x.shape(),
                          y.shape(), perm_);
    });
  }

  std::vector<Gradient> gradient(GradContext& ctx) const override {
    if (ctx.input_spec(0).dtype != DType::f32) return {};
    std::vector<int> inverse(perm_.size());
    for (std::size_t i = 0; i < perm_.size(); ++i) inverse[perm_[i]] = static_cast<int>(i);
    return {{ops::transpose(ctx.graph, ctx.grad(), std::move(inverse)), {}}};
  }

 private:
  std::vector<int> perm_;
  kernels::OnceCell<TransposePlan> plan_;
};

}  // namespace

Value ops::transpose(Graph& g, Value x, std::vector<int> perm, const std::string& name) {
  return g.add1(std::make_shared<TransposeOp>(std::move(perm)), {x}, name);
}

}  // namespace trib
