// What applications exchange over a Connection: an operation code, a small body of bytes
// and an optional tensor. Framing, tags and sequence numbers stay inside the transport.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "trib/core/tensor.h"
#include "trib/net/peer_identity.h"

namespace trib::net {

struct Message {
  std::uint32_t method = 0;  // application-defined operation code; opaque to the transport
  std::string body;          // small metadata: keys, serialised arguments
  Tensor tensor;             // undefined when the message carries none
};

struct RequestOptions {
  // Deadline for the reply; zero means NetOptions::request_timeout.
  std::chrono::milliseconds timeout{0};
  // When defined, a reply tensor of the same dtype and element count is received straight
  // into this tensor's storage instead of a fresh allocation; a reply that does not fit
  // fails the request with InvalidArgument.
  Tensor reply_into;
};

// Serves a request (or a one-way message, whose return value is dropped). Exceptions are
// sent back and rethrown on the requester as the same trib error class with this message.
// Runs on the connection's receive thread: keep it short (well under the peer timeout), and
// never wait in it for a reply on the same connection.
using RequestHandler = std::function<Message(Message request, const PeerIdentity& from)>;

// Called once, on the receive thread, when a connection dies for any reason other than a
// local close(): the peer closed, timed out, or sent something that was rejected.
using CloseHandler = std::function<void(const PeerIdentity& peer, std::string_view reason)>;

// The most payload bytes (tensor descriptor + body + tensor) that a request or one-way
// message with this method may carry. Checked from the frame header, before anything is
// allocated: a bigger claim closes the connection as malformed. A server bounds each
// method by what it can legitimately carry, so that even an authenticated peer cannot make
// it allocate more.
using RequestLimit = std::function<std::uint64_t(std::uint32_t method)>;

struct Handlers {
  Handlers() = default;
  Handlers(RequestHandler request, CloseHandler close = {})  // NOLINT: {handler} reads well
      : on_request(std::move(request)), on_close(std::move(close)) {}

  RequestHandler on_request;  // empty: requests are answered with an Unavailable error
  CloseHandler on_close;
  RequestLimit request_limit;  // empty: NetOptions::max_frame_bytes for every method
};

}  // namespace trib::net
