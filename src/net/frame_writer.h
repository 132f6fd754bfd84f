// Sealing and sending frames: the header gets its sequence number, lengths and MAC; the
// header, descriptor, body and tensor bytes then go out in one sendmsg over four iovecs,
// with no copy of the tensor into a staging buffer.
#pragma once

#include <sys/uio.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "net/frame_cipher.h"
#include "net/frame_mac.h"
#include "trib/core/tensor.h"
#include "net/wire_format.h"

namespace trib::net {

// What a sender chooses; seal_frame adds the rest.
struct OutgoingFrame {
  MessageType type = MessageType::heartbeat;
  std::uint32_t method = 0;
  std::uint64_t tag = 0;
  std::span<const std::byte> body;
  const Tensor* tensor = nullptr;  // optional; must stay alive until the frame is sent
};

// Bytes after the header: descriptor + body + tensor.
std::uint64_t payload_bytes(const OutgoingFrame& frame);

class SealedFrame {
 public:
  FrameHeader header;
  HeaderBytes header_bytes{};
  std::array<std::byte, kMaxDescriptorBytes> descriptor{};
  std::size_t descriptor_length = 0;
  std::span<const std::byte> body;
  std::span<const std::byte> tensor_bytes;

  // Header, descriptor, body, tensor; empty pieces included (write_all skips them).
  std::array<iovec, 4> iovecs();
  std::uint64_t total_bytes() const;
  // The whole frame in one buffer: for tests and the fuzz corpus, not the send path.
  std::vector<std::byte> to_bytes() const;
};

// Fills in lengths and `sequence`, and the MAC unless `mac` is null (handshake frames,
// which carry a zero MAC). The tag is computed over each piece where it lies.
// Throws InvalidArgument if the body exceeds 4 GiB.
SealedFrame seal_frame(const OutgoingFrame& frame, std::uint64_t sequence, FrameMac* mac);

// Seals and writes the frame; see write_all for the errors. Returns bytes written.
std::size_t write_frame(int fd, const OutgoingFrame& frame, std::uint64_t sequence,
                        FrameMac* mac, std::chrono::milliseconds idle_timeout,
                        const std::string& peer);

// Encrypted frames (FrameCipher): the header, flagged kFlagEncrypted with a zero mac field,
// goes in clear as additional data; descriptor, body and tensor bytes are encrypted into
// `scratch` kCipherChunkBytes at a time, each chunk handed to `emit` while still in cache;
// the 16-byte tag comes last. The tensor itself is never written to.
inline constexpr std::size_t kCipherChunkBytes = std::size_t{256} << 10;
// Receives each sealed piece; `last` is false while more of the frame follows.
using ByteSink = std::function<void(std::span<const std::byte> piece, bool last)>;
void seal_encrypted(const OutgoingFrame& frame, std::uint64_t sequence, FrameCipher& cipher,
                    std::vector<std::byte>& scratch, const ByteSink& emit);

// seal_encrypted onto the socket; see write_all for the errors. Returns bytes written.
std::size_t write_encrypted_frame(int fd, const OutgoingFrame& frame, std::uint64_t sequence,
                                  FrameCipher& cipher, std::vector<std::byte>& scratch,
                                  std::chrono::milliseconds idle_timeout, const std::string& peer);

// The whole encrypted frame in one buffer: for tests, not the send path.
std::vector<std::byte> encrypted_frame_bytes(const OutgoingFrame& frame, std::uint64_t sequence,
                                             FrameCipher& cipher);

}  // namespace trib::net
