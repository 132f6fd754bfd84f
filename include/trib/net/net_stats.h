// Counters of what the network layer did and, above all, what it refused. Tests and the
// cluster runtime read them to show that attacks and faults were noticed, not just survived.
#pragma once

#include <atomic>
#include <cstdint>

namespace trib::net {

struct NetStatsSnapshot {
  std::uint64_t connections_opened = 0;     // handshakes completed
  std::uint64_t connections_closed = 0;
  std::uint64_t handshake_failures = 0;     // any handshake that did not complete
  std::uint64_t auth_failures = 0;          // wrong cluster secret (either direction)
  std::uint64_t mac_failures = 0;           // altered frames
  std::uint64_t sequence_failures = 0;      // replayed or reordered frames
  std::uint64_t malformed_frames = 0;       // frames that fail decoding or limits
  std::uint64_t peer_timeouts = 0;          // silent or stalled peers
  std::uint64_t requests_timed_out = 0;
  std::uint64_t frames_sent = 0;
  std::uint64_t frames_received = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
};

class NetStats {
 public:
  using Counter = std::atomic<std::uint64_t>;
  Counter connections_opened{0}, connections_closed{0}, handshake_failures{0}, auth_failures{0},
      mac_failures{0}, sequence_failures{0}, malformed_frames{0}, peer_timeouts{0},
      requests_timed_out{0}, frames_sent{0}, frames_received{0}, bytes_sent{0},
      bytes_received{0};

  NetStatsSnapshot snapshot() const;
};

}  // namespace trib::net
