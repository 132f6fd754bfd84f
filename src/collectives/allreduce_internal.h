// What the allreduce algorithms share: the operation's spec (checked against every peer's
// requests) and the 16-bit wire format, if any.
#pragma once

#include <optional>

#include "collectives/group_core.h"
#include "collectives/reduce_kernels.h"
#include "trib/collectives/allreduce.h"

namespace trib::collectives::detail {

OpSpec allreduce_spec(const Tensor& tensor, const AllreduceOptions& options, Algorithm algorithm);
std::optional<Wire16> wire_format(Compression compression);

// Elements of a packed 16-bit tensor carried as i32 (two values per element).
inline std::int64_t packed_elements(std::int64_t n) { return (n + 1) / 2; }

void ring_allreduce(Group& group, const Tensor& tensor, const AllreduceOptions& options);
void direct_allreduce(Group& group, const Tensor& tensor, const AllreduceOptions& options);

}  // namespace trib::collectives::detail
