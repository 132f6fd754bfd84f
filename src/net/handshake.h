// The challenge-response handshake that opens every TCP connection (sequence in
// docs/wire_protocol.md). Each side sends a fresh random nonce; the client, then the
// server, proves knowledge of the cluster secret with HMAC-SHA256 over a transcript of
// both nonces, both labels and the chosen frame protection; both derive per-direction
// session keys from the secret and the same transcript with HKDF-SHA256. Nothing after the handshake is accepted without them.
#pragma once

#include <functional>
#include <string>

#include "net/frame_mac.h"
#include "trib/net/net_context.h"
#include "trib/net/peer_identity.h"

namespace trib::net {

struct SessionKeys {
  MacAlgorithm mac = MacAlgorithm::poly1305;
  SessionKey send{};
  SessionKey receive{};
};

struct HandshakeResult {
  PeerIdentity peer;  // the label the peer proved, at `address`
  SessionKeys keys;
};

// Runs the client side on a connected socket to `address`, within handshake_timeout.
// Throws Unauthenticated (wrong secret on either side), Timeout, Unavailable or Corruption,
// each naming the address; failures are counted in the context's stats.
HandshakeResult client_handshake(int fd, const NetContext& context, MacAlgorithm mac,
                                 const std::string& address);

// Runs the server side on an accepted socket from `address`. Same errors; a client that
// fails to prove the secret gets a reject frame and is counted in auth_failures, and one
// that proposes no encryption to a node that requires it is refused (Unauthenticated).
// `hello_received` runs once the client's first frame has arrived: a client that sends
// nothing is the first to be dropped when pre-authentication slots run short.
HandshakeResult server_handshake(int fd, const NetContext& context, const std::string& address,
                                 const std::function<void()>& hello_received = {});

}  // namespace trib::net
