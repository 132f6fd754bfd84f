// The frame layout on the wire (docs/wire_protocol.md). Every frame is a fixed 56-byte
// header, then `payload_length` bytes: an optional tensor descriptor, the body, and the
// tensor's raw bytes. All integers are little-endian. The structs below mirror the layout
// byte for byte; encode/decode go field by field so the host's endianness never leaks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "trib/core/shape.h"

namespace trib::net {

inline constexpr std::uint32_t kFrameMagic = 0x31425254;  // "TRB1" as bytes on the wire
inline constexpr std::uint8_t kWireVersion = 2;
inline constexpr std::size_t kMacBytes = 16;

enum class MessageType : std::uint8_t {
  // Handshake (unauthenticated frames, MAC field zero).
  hello = 1,      // client -> server: MAC proposal, client nonce, client label
  challenge = 2,  // server -> client: server nonce, server label
  proof = 3,      // client -> server: HMAC proof of the secret
  welcome = 4,    // server -> client: the server's proof
  reject = 5,     // either way: why the handshake failed
  // Session (every frame MAC'd with the session key, sequence-numbered).
  request = 16,
  response = 17,
  error_response = 18,  // method = remote error code, body = message
  notify = 19,          // one-way
  heartbeat = 20,
  goodbye = 21,         // orderly close
};

bool is_known_message_type(std::uint8_t raw);
bool is_handshake_type(MessageType type);
std::string_view message_type_name(MessageType type);

enum FrameFlags : std::uint16_t {
  kFlagHasTensor = 1u << 0,  // payload starts with a tensor descriptor
  // The payload is encrypted (AES-256-GCM) and its 16-byte tag follows it, outside
  // payload_length; the header's mac field is then zero. Must match the session's mode.
  kFlagEncrypted = 1u << 1,
  kKnownFlags = kFlagHasTensor | kFlagEncrypted,
};

// Host-side image of the 56-byte header.
struct FrameHeader {
  std::uint32_t magic = kFrameMagic;
  std::uint8_t version = kWireVersion;
  std::uint8_t type = 0;             // MessageType
  std::uint16_t flags = 0;           // FrameFlags
  std::uint32_t method = 0;          // application opcode, or remote error code
  std::uint32_t body_length = 0;
  std::uint64_t tag = 0;             // matches a response to its request
  std::uint64_t sequence = 0;        // per direction, 1, 2, 3, ... after the handshake
  std::uint64_t payload_length = 0;  // descriptor + body + tensor bytes
  std::array<std::byte, kMacBytes> mac{};

  MessageType message_type() const { return static_cast<MessageType>(type); }
  bool has_tensor() const { return (flags & kFlagHasTensor) != 0; }
  bool encrypted() const { return (flags & kFlagEncrypted) != 0; }
};

inline constexpr std::size_t kHeaderBytes = 56;
static_assert(std::is_standard_layout_v<FrameHeader>);
static_assert(sizeof(FrameHeader) == kHeaderBytes, "no padding: the struct is the wire layout");
static_assert(offsetof(FrameHeader, magic) == 0);
static_assert(offsetof(FrameHeader, version) == 4);
static_assert(offsetof(FrameHeader, type) == 5);
static_assert(offsetof(FrameHeader, flags) == 6);
static_assert(offsetof(FrameHeader, method) == 8);
static_assert(offsetof(FrameHeader, body_length) == 12);
static_assert(offsetof(FrameHeader, tag) == 16);
static_assert(offsetof(FrameHeader, sequence) == 24);
static_assert(offsetof(FrameHeader, payload_length) == 32);
static_assert(offsetof(FrameHeader, mac) == 40);

// Fixed part of the tensor descriptor; `rank` little-endian int64 dims follow it. The rank
// is 32 bits wide so that an absurd claim (1,000 dims) is read and refused as such.
struct TensorDescriptorPrefix {
  std::uint8_t dtype = 0;  // DType
  std::array<std::uint8_t, 3> reserved{};  // zero
  std::uint32_t rank = 0;  // <= Shape::kMaxRank
};

inline constexpr std::size_t kDescriptorPrefixBytes = 8;
inline constexpr std::size_t kMaxDescriptorBytes =
    kDescriptorPrefixBytes + 8 * static_cast<std::size_t>(Shape::kMaxRank);
static_assert(std::is_standard_layout_v<TensorDescriptorPrefix>);
static_assert(sizeof(TensorDescriptorPrefix) == kDescriptorPrefixBytes);
static_assert(offsetof(TensorDescriptorPrefix, dtype) == 0);
static_assert(offsetof(TensorDescriptorPrefix, reserved) == 1);
static_assert(offsetof(TensorDescriptorPrefix, rank) == 4);

constexpr std::size_t descriptor_bytes(int rank) {
  return kDescriptorPrefixBytes + 8 * static_cast<std::size_t>(rank);
}

using HeaderBytes = std::array<std::byte, kHeaderBytes>;

HeaderBytes encode_header(const FrameHeader& header);
// Field-by-field decode; no validation (see frame_decoder for that).
FrameHeader decode_header_fields(std::span<const std::byte, kHeaderBytes> bytes);

}  // namespace trib::net
