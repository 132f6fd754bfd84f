// Tunables of the network layer. One NetOptions lives in each NetContext; ConnectOptions
// overrides a few of them for one connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trib {
class Allocator;
}

namespace trib::net {

// How each frame is authenticated (see docs/wire_protocol.md). The client proposes one in
// its hello; the proposal is bound into both handshake proofs, so it cannot be downgraded.
enum class MacAlgorithm : std::uint8_t {
  // RFC 8439 ChaCha20-Poly1305 run with an empty plaintext: all frame bytes are additional
  // data, the sequence number is the nonce, so each frame gets a fresh one-time Poly1305
  // key. Fastest alone (about 12 GB/s, against 8.6 for GMAC and 1.8 for HMAC-SHA256).
  poly1305 = 1,
  // AES-256-GCM over additional data only; the sequence number is the IV. The default: in
  // the transport, where the copies compete for the same core, it is the fastest
  // (docs/wire_protocol.md).
  gmac_aes256 = 2,
  hmac_sha256 = 3,   // HMAC-SHA256 truncated to 16 bytes; slowest, most conservative
};

std::string_view mac_algorithm_name(MacAlgorithm mac);
bool is_valid_mac_algorithm(std::uint8_t raw);

struct NetOptions {
  // Largest frame (descriptor + body + tensor bytes) accepted or sent; bigger claims close
  // the connection before anything is allocated.
  std::uint64_t max_frame_bytes = std::uint64_t{1} << 30;
  // An idle connection sends a heartbeat this often, so silence means a dead peer.
  std::chrono::milliseconds heartbeat_interval{1000};
  // No bytes from the peer for this long (idle or mid-frame), or the peer not draining our
  // writes for this long: the connection is declared dead.
  std::chrono::milliseconds peer_timeout{5000};
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds handshake_timeout{5000};
  // Deadline of a request when RequestOptions gives none.
  std::chrono::milliseconds request_timeout{60000};
  MacAlgorithm mac = MacAlgorithm::gmac_aes256;
  // Where listen() binds when the address names no host.
  std::string bind_host = "127.0.0.1";
  // Received tensors are allocated here (nullptr: the default heap allocator).
  Allocator* allocator = nullptr;
};

struct ConnectOptions {
  std::optional<MacAlgorithm> mac;  // overrides NetOptions::mac for this connection
};

}  // namespace trib::net
