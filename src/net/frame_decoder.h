// Validation of untrusted frame bytes, before anything is allocated or interpreted: the
// header against the frame-size limit, the tensor descriptor (dtype, rank, dimensions,
// element-count overflow) and the consistency of the lengths. Shared by the socket reader,
// the unit tests and the libFuzzer target (tests/fuzz/frame_decoder_fuzz.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "trib/core/dtype.h"
#include "trib/core/error.h"
#include "trib/core/shape.h"
#include "net/wire_format.h"

namespace trib {
class Tensor;
}

namespace trib::net {

// A received frame was refused; `kind` says which counter it belongs to.
class FrameRejected : public Corruption {
 public:
  enum class Kind { malformed, bad_mac, bad_sequence };
  FrameRejected(Kind kind, const std::string& message) : Corruption(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct TensorDescriptor {
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t nbytes = 0;  // numel * dtype size, overflow-checked
};

// Magic, version, known type and flags, payload_length <= max_frame_bytes, body fits.
// Throws FrameRejected(malformed).
FrameHeader decode_header(std::span<const std::byte, kHeaderBytes> bytes,
                          std::uint64_t max_frame_bytes);

// The descriptor's fixed part: dtype known, rank <= Shape::kMaxRank, reserved bytes zero.
// Returns the rank, so the caller knows how many dimension bytes to read next.
int decode_descriptor_prefix(std::span<const std::byte, kDescriptorPrefixBytes> bytes);

// The whole descriptor (prefix + dims): each dim >= 0, element count <= Shape::kMaxElements,
// and descriptor + body + tensor bytes == the header's payload_length exactly.
TensorDescriptor decode_descriptor(std::span<const std::byte> descriptor,
                                   const FrameHeader& header);

// Encodes the descriptor of `tensor` into `out`; returns the number of bytes used.
std::size_t encode_descriptor(const Tensor& tensor,
                              std::span<std::byte, kMaxDescriptorBytes> out);

// A whole frame in memory, decoded and validated (MAC not checked: that needs the key).
struct FrameView {
  FrameHeader header;
  std::optional<TensorDescriptor> tensor;
  std::span<const std::byte> body;
  std::span<const std::byte> tensor_bytes;
};
// Throws FrameRejected(malformed) for anything invalid, including trailing or missing bytes.
FrameView decode_frame(std::span<const std::byte> frame, std::uint64_t max_frame_bytes);

}  // namespace trib::net
