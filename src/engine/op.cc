#include "trib/engine/op.h"

#include "trib/engine/context.h"

namespace trib {

Tensor& KernelContext::output(int i) {
  const TensorSpec& s = node_.outputs[i];
  outputs_[i] = Tensor::empty(s.dtype, s.shape, &alloc_);
  return outputs_[i];
}

Tensor& KernelContext::output_zeros(int i) {
  const TensorSpec& s = node_.outputs[i];
  outputs_[i] = Tensor::zeros(s.dtype, s.shape, &alloc_);
  return outputs_[i];
}

void KernelContext::set_output(int i, Tensor t) {
  const TensorSpec& s = node_.outputs[i];
  TRIB_CHECK(t.dtype() == s.dtype && t.shape() == s.shape, InvalidArgument,
             "kernel of '{}' produced {} for output {} where {} was inferred", node_.name,
             t.spec_string(), i, s.to_string());
  outputs_[i] = std::move(t);
}

Tensor& KernelContext::output_reusing(int i, int in) {
  const Tensor& src = inputs_[in];
  const TensorSpec& s = node_.outputs[i];
  // use_count 2: the executor's slot for the value and our span's view of it. Anything more
  // means a view (a reshape) or a fetch still holds the storage.
  if (in < static_cast<int>(input_is_last_use.size()) && input_is_last_use[in] &&
      src.dtype() == s.dtype && src.numel() == s.shape.numel() &&
      src.storage().use_count() <= 2) {
    outputs_[i] = src.reshape(s.shape);
    return outputs_[i];
  }
  return output(i);
}

int KernelContext::intra_op_threads() const { return engine_.intra_op_threads(); }

std::vector<Gradient> Op::gradient(GradContext& ctx) const {
  throw InvalidArgument(fmt::format("{} '{}' has no gradient", name(), ctx.node.name));
}

}  // namespace trib
