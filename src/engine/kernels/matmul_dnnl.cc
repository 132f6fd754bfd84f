#include "engine/kernels/matmul_dnnl.h"

#include <dnnl.h>

namespace trib::kernels {
namespace {

using tag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;

dnnl::primitive_attr attr_with(bool relu) {
  dnnl::primitive_attr attr = cached_primitive_attr();
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

}  // namespace

MatmulDnnl::MatmulDnnl(const MatmulShape& s, const dnnl::engine& eng)
    : s_(s), engine_(eng.get()),
      path_(s.transpose_a ? (s.bias || s.relu ? Path::matmul : Path::sgemm)
                          : s.transpose_b ? Path::matmul : Path::inner_product) {
  if (path_ == Path::inner_product) {
    // b [K, N] row-major is the inner product's weights {N, K} read column-major (ba).
    a_ = dnnl::memory::desc({s.m, s.k}, f32, tag::ab);
    b_ = dnnl::memory::desc({s.n, s.k}, f32, tag::ba);
    bias_ = dnnl::memory::desc({s.n}, f32, tag::a);
    y_ = dnnl::memory::desc({s.m, s.n}, f32, tag::ab);
    auto prop = dnnl::prop_kind::forward_inference;  // no workspace either way
    auto d = s.bias ? dnnl::inner_product_forward::desc(prop, a_, b_, bias_, y_)
                    : dnnl::inner_product_forward::desc(prop, a_, b_, y_);
    ip_.emplace(dnnl::inner_product_forward::primitive_desc(d, attr_with(s.relu), eng));
  } else if (path_ == Path::matmul) {
    // A transposed operand is the same matrix read column-major (ba), never copied here.
    a_ = dnnl::memory::desc({s.m, s.k}, f32, s.transpose_a ? tag::ba : tag::ab);
    b_ = dnnl::memory::desc({s.k, s.n}, f32, s.transpose_b ? tag::ba : tag::ab);
    bias_ = dnnl::memory::desc({1, s.n}, f32, tag::ab);
    y_ = dnnl::memory::desc({s.m, s.n}, f32, tag::ab);
    auto d = s.bias ? dnnl::matmul::desc(a_, b_, bias_, y_) : dnnl::matmul::desc(a_, b_, y_);
    mm_.emplace(dnnl::matmul::primitive_desc(d, attr_with(s.relu), eng));
  }
}

void MatmulDnnl::run(DnnlCall& call, const Tensor& a, const Tensor& b, const Tensor* bias,
                     const Tensor& y) const {
  switch (path_) {
    case Path::inner_product: {
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, call.wrap(a, a_)},
                                                 {DNNL_ARG_WEIGHTS, call.wrap(b, b_)},
                                                 {DNNL_ARG_DST, call.wrap(y, y_)}};
      if (bias) args.emplace(DNNL_ARG_BIAS, call.wrap(*bias, bias_));
      call.run(*ip_, std::move(args));
      return;
    }
    case Path::matmul: {
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, call.wrap(a, a_)},
                                                 {DNNL_ARG_WEIGHTS, call.wrap(b, b_)},
                                                 {DNNL_ARG_DST, call.wrap(y, y_)}};
      if (bias) args.emplace(DNNL_ARG_BIAS, call.wrap(*bias, bias_));
      call.run(*mm_, std::move(args));
      return;
    }
    case Path::sgemm: {
      // Row-major: a is stored [K, M] (transposed), b [K, N] or [N, K].
      const dnnl_status_t st = dnnl_sgemm(
          'T', s_.transpose_b ? 'T' : 'N', s_.m, s_.n, s_.k, 1.0f, a.data<float>(), s_.m,
          b.data<float>(), s_.transpose_b ? s_.k : s_.n, 0.0f, y.data<float>(), s_.n);
      TRIB_CHECK(st == dnnl_success, Error, "dnnl_sgemm failed with status {}", static_cast<int>(st));
      return;
    }
  }
}

}  // namespace trib::kernels
