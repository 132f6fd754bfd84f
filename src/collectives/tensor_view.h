// Tensors over a range of another tensor's memory, for sending a piece of a caller's buffer
// without copying it and for receiving straight into one. The view keeps the base tensor's
// storage alive, and can report when its last handle is dropped: that is how a collective
// knows the transport has finished sending a piece of the caller's buffer, and so when the
// caller may have it back.
#pragma once

#include <cstdint>
#include <functional>

#include "trib/core/tensor.h"

namespace trib::collectives::detail {

// A flat [count] tensor of `base`'s dtype over elements [offset, offset + count) of `base`
// (which must be contiguous, as every Tensor is). `on_release` runs once, on whichever
// thread drops the last handle.
Tensor flat_view(const Tensor& base, std::int64_t offset, std::int64_t count,
                 std::function<void()> on_release = {});

// The same over elements of another dtype (for packed 16-bit wire formats carried as i32):
// `bytes` must be a multiple of the dtype's size.
Tensor byte_view(const Tensor& base, std::size_t byte_offset, std::size_t bytes, DType dtype,
                 std::function<void()> on_release = {});

}  // namespace trib::collectives::detail
