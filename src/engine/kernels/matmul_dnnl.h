// The fast kernel of one matmul node, y[M, N] = op(a) op(b) (+ bias, then ReLU), on plain
// row-major operands, by whichever oneDNN entry point is fastest for its form. Measured on
// the benchmark's layer shapes (one thread, AVX-512):
//   - no transpose (a dense layer's forward): the inner-product primitive, which runs
//     oneDNN's GEMM with the bias and ReLU applied as it goes. The matmul primitive packs b
//     on every call, which for a 3136 x 1024 weight at batch 64 made it 30% slower.
//   - a transposed (a weight gradient, x^T dy): dnnl_sgemm, 5-13% faster than the matmul
//     primitive, which copies a transposed first.
//   - otherwise (an input gradient, dy w^T): the matmul primitive, 5% faster than sgemm.
// All three are deterministic for a given thread count, so a node always computes the
// same bits.
#pragma once

#include <optional>

#include "engine/kernels/dnnl_call.h"

namespace trib::kernels {

struct MatmulShape {
  std::int64_t m, k, n;
  bool transpose_a, transpose_b;
  bool bias, relu;
};

class MatmulDnnl {
 public:
  MatmulDnnl(const MatmulShape& s, const dnnl::engine& eng);
  // bias: [N] when built with one, else null.
  void run(DnnlCall& call, const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& y) const;
  dnnl_engine_t engine() const { return engine_; }

 private:
  enum class Path { inner_product, sgemm, matmul };
  MatmulShape s_;
  dnnl_engine_t engine_;
  Path path_;
  std::optional<Primitive<dnnl::inner_product_forward>> ip_;
  std::optional<Primitive<dnnl::matmul>> mm_;
  dnnl::memory::desc a_, b_, bias_, y_;
};

}  // namespace trib::kernels
