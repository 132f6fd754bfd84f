#include "engine/kernels/dnnl_call.h"

namespace trib::kernels {

dnnl::primitive_attr cached_primitive_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

DnnlCall::DnnlCall(const EngineContext& engine, Allocator& alloc)
    : engine_(engine.dnnl_engine()), reorders_(engine.reorder_cache()), alloc_(alloc),
      stream_(engine_) {}

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

dnnl::memory DnnlCall::input(const Tensor& t, const dnnl::memory::desc& have,
                             const dnnl::memory::desc& want) {
  dnnl::memory user = wrap(t, have);
  if (have == want) return user;
  dnnl::memory converted = temporary(want);
  reorder(user, converted);
  return converted;
}

dnnl::memory DnnlCall::output(const Tensor& t, const dnnl::memory::desc& have,
                              const dnnl::memory::desc& chosen) {
  return have == chosen ? wrap(t, have) : temporary(chosen);
}

void DnnlCall::finish_output(const dnnl::memory& written, const Tensor& t,
                             const dnnl::memory::desc& have) {
  if (written.get_data_handle() == t.raw_data()) return;
  reorder(written, wrap(t, have));
}

void DnnlCall::reorder(const dnnl::memory& from, const dnnl::memory& to) {
  const dnnl::reorder& r = reorders_.get(from.get_desc(), to.get_desc(), engine_);
  r.execute(stream_, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

Tensor to_plain(const EngineContext& engine, Allocator& alloc, const Tensor& t,
                const MemoryLayout& layout, const TensorSpec& spec) {
  Tensor plain = Tensor::empty(spec.dtype, spec.shape, &alloc);
  DnnlCall call(engine, alloc);
  call.reorder(call.wrap(t, layout.desc()), call.wrap(plain, desc_of(nullptr, spec)));
  return plain;
}

}  // namespace trib::kernels
