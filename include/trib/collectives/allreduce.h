// Allreduce: every rank ends with the element-wise sum (or mean) of every rank's tensor.
//   collectives::allreduce(group, grads, {.average = true});
// Two algorithms (docs/collectives.md has their steps and bytes on the wire):
//   ring   - reduce-scatter then allgather around the ring, each block sent in pipelined
//            segments; bandwidth-optimal: each rank sends 2(N-1)/N of the tensor.
//   direct - every rank fetches every other rank's tensor and sums them all in rank order;
//            one step, so latency-optimal for small tensors.
// `automatic` picks direct for tensors of at most GroupOptions::small_bytes, ring above.
// Every rank computes bit-identical results (sums are formed in the same order everywhere).
#pragma once

#include <chrono>
#include <string_view>

#include "trib/collectives/group.h"
#include "trib/core/tensor.h"

namespace trib::collectives {

enum class AllreduceAlgorithm { automatic, ring, direct };

// What travels on the wire for an f32 allreduce. The 16-bit formats halve the bytes; every
// sum is still formed in fp32, and only values in flight are rounded (to nearest, ties to
// even), so the error is a few units of the 16-bit format's last place per hop.
enum class Compression { none, bf16, fp16 };

std::string_view compression_name(Compression compression);
// "none", "bf16" or "fp16"; throws InvalidArgument naming the text and the valid names.
Compression parse_compression(std::string_view name);

struct AllreduceOptions {
  bool average = false;  // divide by the group size (f32 only)
  Compression compression = Compression::none;  // f32 only
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::automatic;
  std::chrono::milliseconds timeout{0};  // 0: GroupOptions::op_timeout
};

// Sums `tensor` (f32, i32 or i64; integers wrap) across the group, in place. Every rank must
// pass the same dtype and shape and the same options; a mismatch is found before any data
// moves between the two ranks that disagree and fails every rank with InvalidArgument
// naming both shapes. A dead or stalled rank fails every rank with Unavailable naming it.
void allreduce(Group& group, const Tensor& tensor, const AllreduceOptions& options = {});

// The algorithm `automatic` resolves to for this tensor.
AllreduceAlgorithm choose_allreduce_algorithm(const Group& group, const Tensor& tensor,
                                              const AllreduceOptions& options);

}  // namespace trib::collectives
