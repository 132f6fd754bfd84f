#include "engine/kernels/relayout.h"

namespace trib::kernels {

Relayout::Relayout(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen,
                   Direction dir, const dnnl::engine& engine)
    : plain_(plain), chosen_(chosen) {
  if (plain_ == chosen_) return;
  const auto& from = dir == Direction::in ? plain_ : chosen_;
  const auto& to = dir == Direction::in ? chosen_ : plain_;
  pd_.emplace(engine, from, engine, to, cached_primitive_attr());
  reorder_.emplace(*pd_);
}

dnnl::memory Relayout::input(DnnlCall& call, const Tensor& t) const {
  dnnl::memory user(plain_, call.engine(), t.raw_data());
  if (!reorder_) return user;
  dnnl::memory converted = call.temporary(chosen_);
  call.run(*reorder_, *pd_, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, converted}});
  return converted;
}

dnnl::memory Relayout::output(DnnlCall& call, const Tensor& t) const {
  if (!reorder_) return dnnl::memory(plain_, call.engine(), t.raw_data());
  return call.temporary(chosen_);
}

void Relayout::finish_output(DnnlCall& call, const dnnl::memory& written, const Tensor& t) const {
  if (!reorder_) return;
  dnnl::memory user(plain_, call.engine(), t.raw_data());
  call.run(*reorder_, *pd_, {{DNNL_ARG_FROM, written}, {DNNL_ARG_TO, user}});
}

}  // namespace trib::kernels
