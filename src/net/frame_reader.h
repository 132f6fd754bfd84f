// Receiving one frame from a socket, in the order that keeps untrusted bytes harmless:
// header decoded and checked against the size limit; descriptor validated; body and tensor
// bytes read into buffers bounded by that limit (the tensor straight into its destination);
// MAC verified over every piece as it lands; sequence number checked. Only then is the
// frame returned for anyone to interpret.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "net/frame_cipher.h"
#include "net/frame_decoder.h"
#include "net/frame_mac.h"
#include "trib/core/allocator.h"
#include "trib/core/tensor.h"

namespace trib::net {

struct InboundFrame {
  FrameHeader header;
  std::string body;
  Tensor tensor;  // undefined when the frame carries none
  MessageType type() const { return header.message_type(); }
};

// Picks where a received tensor lands, given the validated header and descriptor: a
// defined tensor of the same dtype and byte size is filled in place; anything else
// (undefined, or not fitting) means a fresh allocation.
using DestinationChooser = std::function<Tensor(const FrameHeader&, const TensorDescriptor&)>;

// The most payload bytes a frame with this (size-checked) header may carry; below
// max_frame_bytes for messages whose legitimate size is known (Handlers::request_limit).
using PayloadLimit = std::function<std::uint64_t(const FrameHeader&)>;

class FrameReader {
 public:
  FrameReader(int fd, std::string peer, std::uint64_t max_frame_bytes,
              Allocator* allocator = nullptr)
      : fd_(fd), peer_(std::move(peer)), max_frame_bytes_(max_frame_bytes),
        allocator_(allocator) {}

  // Reads the next frame. With a MAC, its tag must verify and its sequence number must be
  // `expected_sequence`; without one (handshake), neither is checked. Throws
  // FrameRejected for invalid frames, Timeout after `idle_timeout` of silence, Unavailable
  // when the stream ends.
  InboundFrame read(FrameMac* mac, std::uint64_t expected_sequence,
                    std::chrono::milliseconds idle_timeout,
                    const DestinationChooser& choose = {});
  // The same for an encrypted session: every frame must be flagged kFlagEncrypted, its
  // payload is decrypted in place piece by piece as it lands, and its trailing tag must
  // verify (a failure counts as bad_mac) before the frame is returned.
  InboundFrame read_encrypted(FrameCipher& cipher, std::uint64_t expected_sequence,
                              std::chrono::milliseconds idle_timeout,
                              const DestinationChooser& choose = {});

  // Bytes received by the last read().
  std::uint64_t last_frame_bytes() const { return last_frame_bytes_; }

  void set_peer(std::string peer) { peer_ = std::move(peer); }
  // Checked right after the header, before the descriptor, body or tensor are read.
  void set_payload_limit(PayloadLimit limit) { limit_ = std::move(limit); }

 private:
  InboundFrame read_any(FrameMac* mac, FrameCipher* cipher, std::uint64_t expected_sequence,
                        std::chrono::milliseconds idle_timeout, const DestinationChooser& choose);

  int fd_;
  std::string peer_;
  std::uint64_t max_frame_bytes_;
  Allocator* allocator_;
  std::uint64_t last_frame_bytes_ = 0;
  PayloadLimit limit_;
};

}  // namespace trib::net
