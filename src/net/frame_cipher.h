// Frame encryption: AES-256-GCM over the payload (descriptor, body, tensor bytes), with the
// header (MAC field zero) as additional data and the 16-byte tag sent after the payload.
// Like FrameMac it is fed piece by piece, so a large tensor is encrypted through a small
// cache-resident staging buffer on the way out and decrypted in place as it lands. One
// FrameCipher per direction of a connection, keyed with that direction's session key; the
// 96-bit nonce is the frame's sequence number, which never repeats under one key.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "net/frame_mac.h"

namespace trib::net {

class FrameCipher {
 public:
  enum class Direction { seal, open };
  FrameCipher(Direction direction, const SessionKey& key);
  ~FrameCipher();
  FrameCipher(const FrameCipher&) = delete;
  FrameCipher& operator=(const FrameCipher&) = delete;

  // Starts the frame with this sequence number; `header` is authenticated, not encrypted.
  void begin(std::uint64_t sequence, std::span<const std::byte> header);
  // Seal side: encrypts `in` into `out` (same size; may be the same memory).
  void encrypt(std::span<const std::byte> in, std::span<std::byte> out);
  MacTag finish_seal();
  // Open side: decrypts in place. The plaintext is not to be trusted until finish_open()
  // returned true: a frame that fails is discarded with its connection.
  void decrypt(std::span<std::byte> bytes);
  bool finish_open(const MacTag& tag);

 private:
  struct Ctx;
  Direction direction_;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace trib::net
