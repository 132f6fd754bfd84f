// Who is at the other end of a connection: the role and index it announced during the
// authenticated handshake, plus the address we see it at. Every error and log line about a
// connection names the peer through to_string(), e.g. "worker 3 at 127.0.0.1:4567".
#pragma once

#include <cstdint>
#include <string>

namespace trib::net {

struct PeerIdentity {
  std::string role;      // "worker", "ps", "coordinator", ...: [a-z0-9_-], at most 32 chars
  std::int32_t index = 0;  // -1: not assigned yet (a member joining the coordinator)
  std::string address;   // "127.0.0.1:4567" or an in-process name; filled in by the transport

  // "worker 3 at 127.0.0.1:4567"; "worker at ADDRESS" while its index is not assigned (-1);
  // "peer at ADDRESS" before the handshake has named it.
  std::string to_string() const;
};

// Throws InvalidArgument unless `role` is 1..32 characters of [a-z0-9_-], so that labels
// stay printable in logs and bounded on the wire.
void validate_role(const std::string& role);

}  // namespace trib::net
