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
  return read_any(mac, nullptr, expected_sequence, idle_timeout, choose);
}

InboundFrame FrameReader::read_encrypted(FrameCipher& cipher, std::uint64_t expected_sequence,
                                         std::chrono::milliseconds idle_timeout,
                                         const DestinationChooser& choose) {
  return read_any(nullptr, &cipher, expected_sequence, idle_timeout, choose);
}

InboundFrame FrameReader::read_any(FrameMac* mac, FrameCipher* cipher,
                                   std::uint64_t expected_sequence,
                                   std::chrono::milliseconds idle_timeout,
                                   const DestinationChooser& choose) {
  InboundFrame frame;
  HeaderBytes header_bytes;
  read_exact(fd_, header_bytes, idle_timeout, peer_);
  FrameHeader& h = frame.header;
  h = decode_header(header_bytes, max_frame_bytes_);
  // A session is encrypted or not as agreed in the handshake; a frame may not differ.
  if (h.encrypted() != (cipher != nullptr)) {
    throw FrameRejected(FrameRejected::Kind::malformed,
                        fmt::format("{} {} frame from {} on {} session",
                                    h.encrypted() ? "encrypted" : "unencrypted",
                                    message_type_name(h.message_type()), peer_,
                                    cipher ? "an encrypted" : "an unencrypted"));
  }
  if (limit_) {
    if (std::uint64_t limit = limit_(h); h.payload_length > limit) {
      throw FrameRejected(
          FrameRejected::Kind::malformed,
          fmt::format("{} frame (method {:#x}) from {} claims {} payload bytes; at most {} are "
                      "accepted for it",
                      message_type_name(h.message_type()), h.method, peer_, h.payload_length,
                      limit));
    }
  }
  PieceObserver authenticate;
  if (mac != nullptr) {
    mac->begin(h.sequence);
    mac->update(header_for_mac(h));
    authenticate = [mac](std::span<std::byte> piece) { mac->update(piece); };
  } else if (cipher != nullptr) {
    cipher->begin(h.sequence, header_for_mac(h));
    authenticate = [cipher](std::span<std::byte> piece) { cipher->decrypt(piece); };
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

  bool verified = true;
  if (cipher != nullptr) {
    MacTag tag;
    read_exact(fd_, tag, idle_timeout, peer_);
    last_frame_bytes_ += tag.size();
    verified = cipher->finish_open(tag);
  } else if (mac != nullptr) {
    verified = tags_equal(mac->finish(), h.mac);
  }
  if (mac != nullptr || cipher != nullptr) {
    if (!verified) {
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
