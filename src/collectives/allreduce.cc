// Argument checks and the choice of algorithm; the algorithms are allreduce_ring.cc and
// allreduce_direct.cc.
#include <fmt/format.h>

#include "collectives/allreduce_internal.h"

namespace trib::collectives {

std::string_view compression_name(Compression compression) {
  switch (compression) {
    case Compression::none: return "none";
    case Compression::bf16: return "bf16";
    case Compression::fp16: return "fp16";
  }
  return "unknown";
}

Compression parse_compression(std::string_view name) {
  for (Compression c : {Compression::none, Compression::bf16, Compression::fp16}) {
    if (name == compression_name(c)) return c;
  }
  throw InvalidArgument(fmt::format("unknown compression '{}': expected none, bf16 or fp16", name));
}

AllreduceAlgorithm choose_allreduce_algorithm(const Group& group, const Tensor& tensor,
                                              const AllreduceOptions& options) {
  if (options.algorithm != AllreduceAlgorithm::automatic) return options.algorithm;
  const std::size_t wire_bytes =
      options.compression == Compression::none ? tensor.nbytes() : tensor.nbytes() / 2;
  // Fewer elements than ranks would leave ring blocks empty: nothing to pipeline. (For two
  // ranks direct sends what the ring does, in one hop instead of two, but adds the whole
  // tensor rather than half of it; measured, the ring was as fast or faster from 1 MiB.)
  if (wire_bytes <= group.options().small_bytes || tensor.numel() < group.size()) {
    return AllreduceAlgorithm::direct;
  }
  return AllreduceAlgorithm::ring;
}

void allreduce(Group& group, const Tensor& tensor, const AllreduceOptions& options) {
  TRIB_CHECK(tensor.defined(), InvalidArgument, "allreduce: the tensor is undefined");
  TRIB_CHECK(!options.average || tensor.dtype() == DType::f32, InvalidArgument,
             "allreduce: average needs an f32 tensor, got {}", tensor.spec_string());
  TRIB_CHECK(options.compression == Compression::none || tensor.dtype() == DType::f32, InvalidArgument,
             "allreduce: {} compression needs an f32 tensor, got {}", compression_name(options.compression),
             tensor.spec_string());
  if (group.size() == 1 && !group.failed()) return;  // the sum of one tensor; the mean too
  if (choose_allreduce_algorithm(group, tensor, options) == AllreduceAlgorithm::ring) {
    detail::ring_allreduce(group, tensor, options);
  } else {
    detail::direct_allreduce(group, tensor, options);
  }
}

namespace detail {

std::optional<Wire16> wire_format(Compression compression) {
  switch (compression) {
    case Compression::bf16: return Wire16::bf16;
    case Compression::fp16: return Wire16::f16;
    case Compression::none: break;
  }
  return std::nullopt;
}

OpSpec allreduce_spec(const Tensor& tensor, const AllreduceOptions& options, Algorithm algorithm) {
  OpSpec s;
  s.family = Family::allreduce;
  s.algorithm = algorithm;
  s.dtype = tensor.dtype();
  s.shape = tensor.shape();
  s.has_tensor = true;
  s.param = (options.average ? 1u : 0u) | static_cast<std::uint32_t>(options.compression) << 1;
  s.describe_param = [](std::uint32_t p) {
    return fmt::format("{} with {} compression", (p & 1) ? "the average" : "the sum",
                       compression_name(static_cast<Compression>(p >> 1)));
  };
  return s;
}

}  // namespace detail
}  // namespace trib::collectives
