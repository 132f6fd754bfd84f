#include "engine/kernels/dnnl_call.h"

namespace trib::kernels {

dnnl::primitive_attr cached_primitive_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

DnnlCall::DnnlCall(const dnnl::engine& engine, Allocator& alloc)
    : engine_(engine), alloc_(alloc), stream_(engine) {}

// CPU streams run primitives synchronously; waiting anyway keeps the buffers valid should
// that ever change.
DnnlCall::~DnnlCall() { stream_.wait(); }

dnnl::memory DnnlCall::temporary(const dnnl::memory::desc& md) {
  std::size_t bytes = md.get_size();
  auto words = static_cast<std::int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
  buffers_.push_back(Tensor::empty(DType::f32, Shape{std::max<std::int64_t>(words, 1)}, &alloc_));
  return dnnl::memory(md, engine_, buffers_.back().raw_data());
}

void DnnlCall::run(const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
                   std::unordered_map<int, dnnl::memory> args) {
  dnnl::memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, temporary(scratch));
  prim.execute(stream_, args);
}

}  // namespace trib::kernels
