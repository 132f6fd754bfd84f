// The per-frame MAC: a keyed tag over the header (MAC field zeroed) and the payload, fed
// piece by piece so a large tensor is authenticated where it lies, with no staging copy.
// One FrameMac per direction of a connection; the key is that direction's session key and
// the frame's sequence number is the nonce, so no (key, nonce) pair is ever reused.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "trib/net/net_options.h"
#include "net/wire_format.h"

namespace trib::net {

inline constexpr std::size_t kSessionKeyBytes = 32;
using SessionKey = std::array<std::byte, kSessionKeyBytes>;
using MacTag = std::array<std::byte, kMacBytes>;

class FrameMac {
 public:
  FrameMac(MacAlgorithm algorithm, const SessionKey& key);
  ~FrameMac();
  FrameMac(const FrameMac&) = delete;
  FrameMac& operator=(const FrameMac&) = delete;

  // Starts the tag of the frame with this sequence number.
  void begin(std::uint64_t sequence);
  void update(std::span<const std::byte> bytes);
  MacTag finish();

  MacAlgorithm algorithm() const { return algorithm_; }

 private:
  struct Ctx;
  MacAlgorithm algorithm_;
  std::unique_ptr<Ctx> ctx_;
};

// The header bytes as they are MAC'd: with the MAC field zeroed.
HeaderBytes header_for_mac(const FrameHeader& header);

// Constant-time tag comparison.
bool tags_equal(const MacTag& a, const MacTag& b);

}  // namespace trib::net
