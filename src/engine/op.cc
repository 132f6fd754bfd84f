#include "trib/engine/op.h"

#include "engine/kernels/memory_layout.h"
#include "trib/engine/context.h"

namespace trib {

Tensor& KernelContext::output(int i) {
  const TensorSpec& s = node_.outputs[i];
  outputs_[i] = Tensor::empty(s.dtype, s.shape, &alloc_);
  output_layouts_[i] = nullptr;
  return outputs_[i];
}

Tensor& KernelContext::output_zeros(int i) {
  const TensorSpec& s = node_.outputs[i];
  outputs_[i] = Tensor::zeros(s.dtype, s.shape, &alloc_);
  output_layouts_[i] = nullptr;
  return outputs_[i];
}

Tensor& KernelContext::output_in_layout(int i, LayoutPtr layout) {
  if (!layout) return output(i);
  // Blocked buffers are flat words: a reader that ignored the layout would fail on the
  // shape rather than read elements in the wrong order.
  const auto words = static_cast<std::int64_t>((layout->bytes() + 3) / 4);
  outputs_[i] = Tensor::empty(DType::f32, Shape{std::max<std::int64_t>(words, 1)}, &alloc_);
  output_layouts_[i] = std::move(layout);
  return outputs_[i];
}

void KernelContext::set_output(int i, Tensor t) {
  const TensorSpec& s = node_.outputs[i];
  TRIB_CHECK(t.dtype() == s.dtype && t.shape() == s.shape, InvalidArgument,
             "kernel of '{}' produced {} for output {} where {} was inferred", node_.name,
             t.spec_string(), i, s.to_string());
  outputs_[i] = std::move(t);
  output_layouts_[i] = nullptr;
}

Tensor& KernelContext::output_reusing(int i, int in) {
  const Tensor& src = inputs_[in];
  const TensorSpec& s = node_.outputs[i];
  const LayoutPtr& layout = input_layouts_[in];
  // use_count 2: the executor's slot for the value and our span's view of it. Anything more
  // means a view (a reshape) or a fetch still holds the storage.
  const bool fits = layout ? input_specs_[in] == s
                           : src.dtype() == s.dtype && src.numel() == s.shape.numel();
  const bool reusable = fits && input_is_last_use(in) && src.storage().use_count() <= 2;
  if (!reusable) return output_in_layout(i, layout);
  outputs_[i] = layout ? src : src.reshape(s.shape);
  output_layouts_[i] = layout;
  return outputs_[i];
}

double Op::cost_ns(std::span<const TensorSpec> inputs, std::span<const TensorSpec> outputs) const {
  double bytes = 0;
  for (const TensorSpec& s : inputs) bytes += double(s.shape.numel()) * double(dtype_size(s.dtype));
  for (const TensorSpec& s : outputs) bytes += double(s.shape.numel()) * double(dtype_size(s.dtype));
  return bytes * 0.1;  // 10 GB/s
}

std::vector<Gradient> Op::gradient(GradContext& ctx) const {
  throw InvalidArgument(fmt::format("{} '{}' has no gradient", name(), ctx.node.name));
}

}  // namespace trib
