#include "net/wire_format.h"

#include <cstring>

#include "net/little_endian.h"

namespace trib::net {

bool is_known_message_type(std::uint8_t raw) {
  return (raw >= 1 && raw <= 5) || (raw >= 16 && raw <= 21);
}

bool is_handshake_type(MessageType type) {
  return static_cast<std::uint8_t>(type) >= 1 && static_cast<std::uint8_t>(type) <= 5;
}

std::string_view message_type_name(MessageType type) {
  switch (type) {
    case MessageType::hello: return "hello";
    case MessageType::challenge: return "challenge";
    case MessageType::proof: return "proof";
    case MessageType::welcome: return "welcome";
    case MessageType::reject: return "reject";
    case MessageType::request: return "request";
    case MessageType::response: return "response";
    case MessageType::error_response: return "error_response";
    case MessageType::notify: return "notify";
    case MessageType::heartbeat: return "heartbeat";
    case MessageType::goodbye: return "goodbye";
  }
  return "unknown";
}

HeaderBytes encode_header(const FrameHeader& h) {
  HeaderBytes out{};
  std::byte* p = out.data();
  store_le(p + offsetof(FrameHeader, magic), h.magic);
  store_le(p + offsetof(FrameHeader, version), h.version);
  store_le(p + offsetof(FrameHeader, type), h.type);
  store_le(p + offsetof(FrameHeader, flags), h.flags);
  store_le(p + offsetof(FrameHeader, method), h.method);
  store_le(p + offsetof(FrameHeader, body_length), h.body_length);
  store_le(p + offsetof(FrameHeader, tag), h.tag);
  store_le(p + offsetof(FrameHeader, sequence), h.sequence);
  store_le(p + offsetof(FrameHeader, payload_length), h.payload_length);
  std::memcpy(p + offsetof(FrameHeader, mac), h.mac.data(), kMacBytes);
  return out;
}

FrameHeader decode_header_fields(std::span<const std::byte, kHeaderBytes> bytes) {
  const std::byte* p = bytes.data();
  FrameHeader h;
  h.magic = load_le<std::uint32_t>(p + offsetof(FrameHeader, magic));
  h.version = load_le<std::uint8_t>(p + offsetof(FrameHeader, version));
  h.type = load_le<std::uint8_t>(p + offsetof(FrameHeader, type));
  h.flags = load_le<std::uint16_t>(p + offsetof(FrameHeader, flags));
  h.method = load_le<std::uint32_t>(p + offsetof(FrameHeader, method));
  h.body_length = load_le<std::uint32_t>(p + offsetof(FrameHeader, body_length));
  h.tag = load_le<std::uint64_t>(p + offsetof(FrameHeader, tag));
  h.sequence = load_le<std::uint64_t>(p + offsetof(FrameHeader, sequence));
  h.payload_length = load_le<std::uint64_t>(p + offsetof(FrameHeader, payload_length));
  std::memcpy(h.mac.data(), p + offsetof(FrameHeader, mac), kMacBytes);
  return h;
}

}  // namespace trib::net
