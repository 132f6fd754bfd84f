#include "net/frame_decoder.h"

#include <fmt/format.h>

#include "net/little_endian.h"
#include "trib/core/tensor.h"

namespace trib::net {
namespace {

[[noreturn]] void reject(const std::string& reason) {
  throw FrameRejected(FrameRejected::Kind::malformed, reason);
}

}  // namespace

FrameHeader decode_header(std::span<const std::byte, kHeaderBytes> bytes,
                          std::uint64_t max_frame_bytes) {
  FrameHeader h = decode_header_fields(bytes);
  if (h.magic != kFrameMagic) reject(fmt::format("bad frame magic {:#010x}", h.magic));
  if (h.version != kWireVersion) {
    reject(fmt::format("wire version {}, expected {}", h.version, kWireVersion));
  }
  if (!is_known_message_type(h.type)) reject(fmt::format("unknown message type {}", h.type));
  if ((h.flags & ~kKnownFlags) != 0) reject(fmt::format("unknown frame flags {:#06x}", h.flags));
  if (h.payload_length > max_frame_bytes) {
    reject(fmt::format("frame claims {} payload bytes, limit is {}", h.payload_length,
                       max_frame_bytes));
  }
  if (h.body_length > h.payload_length) {
    reject(fmt::format("body length {} exceeds payload length {}", h.body_length,
                       h.payload_length));
  }
  if (!h.has_tensor() && h.body_length != h.payload_length) {
    reject(fmt::format("payload length {} but body length {} and no tensor", h.payload_length,
                       h.body_length));
  }
  return h;
}

int decode_descriptor_prefix(std::span<const std::byte, kDescriptorPrefixBytes> bytes) {
  auto dtype = std::to_integer<std::uint8_t>(bytes[offsetof(TensorDescriptorPrefix, dtype)]);
  auto rank = load_le<std::uint32_t>(bytes.data() + offsetof(TensorDescriptorPrefix, rank));
  if (!is_valid_dtype(dtype)) reject(fmt::format("tensor descriptor has unknown dtype {}", dtype));
  if (rank > static_cast<std::uint32_t>(Shape::kMaxRank)) {
    reject(fmt::format("tensor descriptor has rank {}, at most {}", rank, Shape::kMaxRank));
  }
  for (std::size_t i = offsetof(TensorDescriptorPrefix, reserved);
       i < offsetof(TensorDescriptorPrefix, rank); ++i) {
    if (bytes[i] != std::byte{0}) reject("tensor descriptor has non-zero reserved bytes");
  }
  return static_cast<int>(rank);
}

TensorDescriptor decode_descriptor(std::span<const std::byte> descriptor,
                                   const FrameHeader& header) {
  if (descriptor.size() < kDescriptorPrefixBytes) reject("truncated tensor descriptor");
  int rank = decode_descriptor_prefix(descriptor.first<kDescriptorPrefixBytes>());
  if (descriptor.size() != descriptor_bytes(rank)) {
    reject(fmt::format("tensor descriptor of rank {} has {} bytes, expected {}", rank,
                       descriptor.size(), descriptor_bytes(rank)));
  }
  auto dtype = static_cast<DType>(std::to_integer<std::uint8_t>(descriptor[0]));
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  std::int64_t numel = 1;
  for (int i = 0; i < rank; ++i) {
    std::int64_t d = load_le<std::int64_t>(descriptor.data() + descriptor_bytes(i));
    if (d < 0) reject(fmt::format("tensor dimension {} is negative ({})", i, d));
    // Division, so that the check itself cannot overflow.
    if (d != 0 && numel > Shape::kMaxElements / d) {
      reject(fmt::format("tensor dimensions overflow: more than 2^48 elements at dim {}", i));
    }
    numel *= d;
    dims[static_cast<std::size_t>(i)] = d;
  }
  TensorDescriptor desc{dtype, Shape(std::move(dims)),
                        static_cast<std::uint64_t>(numel) * dtype_size(dtype)};
  std::uint64_t expected = descriptor.size() + std::uint64_t{header.body_length} + desc.nbytes;
  if (expected != header.payload_length) {
    reject(fmt::format("tensor {}{} needs {} payload bytes with its descriptor and body, frame "
                       "says {}",
                       dtype_name(dtype), desc.shape.to_string(), expected,
                       header.payload_length));
  }
  return desc;
}

std::size_t encode_descriptor(const Tensor& tensor,
                              std::span<std::byte, kMaxDescriptorBytes> out) {
  int rank = tensor.shape().rank();
  std::fill(out.begin(), out.begin() + kDescriptorPrefixBytes, std::byte{0});
  out[offsetof(TensorDescriptorPrefix, dtype)] = static_cast<std::byte>(tensor.dtype());
  store_le(out.data() + offsetof(TensorDescriptorPrefix, rank), static_cast<std::uint32_t>(rank));
  for (int i = 0; i < rank; ++i) {
    store_le(out.data() + descriptor_bytes(i), tensor.shape().dims()[static_cast<std::size_t>(i)]);
  }
  return descriptor_bytes(rank);
}

FrameView decode_frame(std::span<const std::byte> frame, std::uint64_t max_frame_bytes) {
  if (frame.size() < kHeaderBytes) {
    reject(fmt::format("frame of {} bytes is shorter than the {}-byte header", frame.size(),
                       kHeaderBytes));
  }
  FrameView view;
  view.header = decode_header(frame.first<kHeaderBytes>(), max_frame_bytes);
  // Its payload is ciphertext: only the session holding the key can check the rest.
  if (view.header.encrypted()) reject("encrypted frame: decoded only by its session");
  std::span<const std::byte> payload = frame.subspan(kHeaderBytes);
  if (payload.size() != view.header.payload_length) {
    reject(fmt::format("frame has {} payload bytes, header says {}", payload.size(),
                       view.header.payload_length));
  }
  std::size_t offset = 0;
  if (view.header.has_tensor()) {
    if (payload.size() < kDescriptorPrefixBytes) reject("payload too short for a descriptor");
    int rank = decode_descriptor_prefix(payload.first<kDescriptorPrefixBytes>());
    if (payload.size() < descriptor_bytes(rank)) reject("payload too short for the descriptor");
    view.tensor = decode_descriptor(payload.first(descriptor_bytes(rank)), view.header);
    offset = descriptor_bytes(rank);
  }
  view.body = payload.subspan(offset, view.header.body_length);
  view.tensor_bytes = payload.subspan(offset + view.header.body_length);
  return view;
}

}  // namespace trib::net
