// Tunables of the network layer. One NetOptions lives in each NetContext; ConnectOptions
// overrides a few of them for one connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trib {
class Allocator;
}

namespace trib::net {

// How each frame is protected (see docs/wire_protocol.md). The client proposes one in its
// hello; the proposal is bound into both handshake proofs, so it cannot be altered on the
// way, and a node that requires encryption refuses a proposal without it.
enum class MacAlgorithm : std::uint8_t {
  // RFC 8439 ChaCha20-Poly1305 run with an empty plaintext: all frame bytes are additional
  // data, the sequence number is the nonce, so each frame gets a fresh one-time Poly1305
  // key. Fastest alone (about 12 GB/s, against 8.6 for GMAC and 1.8 for HMAC-SHA256).
  poly1305 = 1,
  // AES-256-GCM over additional data only; the sequence number is the IV. The default of
  // the MAC-only mode: in the transport, where the copies compete for the same core, it is
  // the fastest MAC (docs/wire_protocol.md).
  gmac_aes256 = 2,
  hmac_sha256 = 3,   // HMAC-SHA256 truncated to 16 bytes; slowest, most conservative
  // AES-256-GCM that encrypts the payload too (descriptor, body, tensor bytes); the header
  // stays in clear as additional data. The default (NetOptions::encryption).
  aes256_gcm = 4,
};

// "aes-256-gcm", "gmac-aes256", "poly1305", "hmac-sha256".
std::string_view mac_algorithm_name(MacAlgorithm mac);
bool is_valid_mac_algorithm(std::uint8_t raw);
// Whether frames under `mac` are encrypted, not only authenticated.
bool encrypts(MacAlgorithm mac);

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
  // The whole handshake's deadline. Short, because a connection that has not proved the
  // secret holds a pre-authentication slot until then (a real one takes a few round trips).
  std::chrono::milliseconds handshake_timeout{2000};
  // Deadline of a request when RequestOptions gives none.
  std::chrono::milliseconds request_timeout{60000};
  // Frames are encrypted (AES-256-GCM) unless this is false (security.encryption: false,
  // for trusted links), when they are only authenticated with `mac`. A node that encrypts
  // refuses peers that propose not to.
  bool encryption = true;
  MacAlgorithm mac = MacAlgorithm::gmac_aes256;
  // A client connect() that fails for want of the server (refused, unreachable, reset or
  // timed out, as when its pre-authentication slots are full) is tried again with
  // exponential backoff until this much time has passed; zero: one attempt. A wrong secret
  // is never retried.
  std::chrono::milliseconds connect_retry{0};
  // Pre-authentication limits of a listener: connections still in their handshake, in all
  // and from one source address. When one is reached, the oldest connection that has not
  // even sent its hello is dropped to make room; if every one has, the new one is refused.
  std::size_t max_pending_handshakes = 64;
  std::size_t max_pending_per_source = 16;
  // Lines about untrusted peers: a few per interval, then one summary line with counts.
  std::chrono::milliseconds untrusted_log_interval{10000};
  // Where listen() binds when the address names no host.
  std::string bind_host = "127.0.0.1";
  // Received tensors are allocated here (nullptr: the default heap allocator).
  Allocator* allocator = nullptr;
};

struct ConnectOptions {
  // Overrides NetOptions::encryption and mac for this connection.
  std::optional<MacAlgorithm> mac;
};

// What a client proposes: the override, else AES-256-GCM when encrypting, else `mac`.
MacAlgorithm frame_protection(const NetOptions& options, const ConnectOptions& connect = {});

}  // namespace trib::net
