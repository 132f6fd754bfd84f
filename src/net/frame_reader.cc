#include "net/frame_reader.h"

#include <fmt/format.h>

#include "net/socket_io.h"

namespace trib::net {
namespace {

bool fits(const Tensor& t, const TensorDescriptor& desc) {
  return t.defined() && t.dtype() == desc.dtype && t.nbytes() == desc.nbytes;
}

}  // namespace

InboundFrame FrameReader::read(FrameMac* mac, std::uint64_t expected_sequence,
                               std::chrono::milliseconds idle_timeout,
                               const DestinationChooser& choose) {
  InboundFrame frame;
  HeaderBytes header_bytes;
  read_exact(fd_, header_bytes, idle_timeout, peer_);
  FrameHeader& h = frame.header;
  h = decode_header(header_bytes, max_frame_bytes_);
  PieceObserver authenticate;
  if (mac != nullptr) {
    mac->begin(h.sequence);
    mac->update(header_for_mac(h));
    authenticate = [mac](std::span<const std::byte> piece) { mac->update(piece); };
  }

  std::optional<TensorDescriptor> desc;
  if (h.has_tensor()) {
    std::array<std::byte, kMaxDescriptorBytes> desc_bytes;
    auto prefix = std::span(desc_bytes).first<kDescriptorPrefixBytes>();
    read_exact(fd_, prefix, idle_timeout, peer_, authenticate);
    int rank = decode_descriptor_prefix(prefix);  // rank checked before its dims are read
    auto dims = std::span(desc_bytes).subspan(kDescriptorPrefixBytes,
                                              descriptor_bytes(rank) - kDescriptorPrefixBytes);
    read_exact(fd_, dims, idle_timeout, peer_, authenticate);
    desc = decode_descriptor(std::span(desc_bytes).first(descriptor_bytes(rank)), h);
  }

  // Both buffers below are bounded by max_frame_bytes through the checks above.
  frame.body.resize(h.body_length);
  read_exact(fd_, std::as_writable_bytes(std::span(frame.body)), idle_timeout, peer_,
             authenticate);
  if (desc) {
    Tensor into = choose ? choose(h, *desc) : Tensor();
    // The sender's shape over the caller's memory when it fits; fresh memory otherwise.
    frame.tensor = fits(into, *desc) ? into.reshape(desc->shape)
                                     : Tensor::empty(desc->dtype, desc->shape, allocator_);
    std::span<std::byte> bytes(static_cast<std::byte*>(frame.tensor.raw_data()), desc->nbytes);
    read_exact(fd_, bytes, idle_timeout, peer_, authenticate);
  }
  last_frame_bytes_ = kHeaderBytes + h.payload_length;

  if (mac != nullptr) {
    if (!tags_equal(mac->finish(), h.mac)) {
      throw FrameRejected(FrameRejected::Kind::bad_mac,
                          fmt::format("{} frame (sequence {}) from {} failed MAC verification",
                                      message_type_name(h.message_type()), h.sequence, peer_));
    }
    if (h.sequence != expected_sequence) {
      throw FrameRejected(
          FrameRejected::Kind::bad_sequence,
          fmt::format("{} frame from {} has sequence {}, expected {} (replayed or reordered)",
                      message_type_name(h.message_type()), peer_, h.sequence,
                      expected_sequence));
    }
  }
  return frame;
}

}  // namespace trib::net
