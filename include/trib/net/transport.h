// The transport interface. TcpTransport (tcp_transport.h) speaks the authenticated wire
// protocol over sockets; InProcTransport (inproc_transport.h) connects endpoints inside one
// process with the same semantics, so that tests can run many ranks as threads.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trib/net/message.h"
#include "trib/net/net_context.h"
#include "trib/net/net_options.h"
#include "trib/net/peer_identity.h"

namespace trib::net {

// One authenticated, bidirectional link to a peer. Either side may send requests; each
// gets a fresh tag so that any number can be in flight at once. Thread-safe.
class Connection {
 public:
  virtual ~Connection() = default;  // closes the connection
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `message`; the future yields the reply with the same tag. It always completes:
  // with the reply, with the peer handler's error (same trib error class), with Timeout
  // after the request's deadline, or with Unavailable naming the peer if the connection
  // dies first. Throws Unavailable at once if the connection is already closed, and
  // InvalidArgument if the message exceeds NetOptions::max_frame_bytes.
  virtual std::future<Message> request(Message message, RequestOptions options = {}) = 0;

  // request() and wait for the reply.
  Message call(Message message, RequestOptions options = {}) {
    return request(std::move(message), std::move(options)).get();
  }

  // One-way message: handed to the peer's handler, no reply.
  virtual void notify(Message message) = 0;

  virtual const PeerIdentity& peer() const = 0;
  virtual bool is_open() const = 0;
  // Why the connection closed; empty while it is open.
  virtual std::string close_reason() const = 0;
  // Closes now: pending requests fail with Unavailable; the peer sees a goodbye. The close
  // handler is not called for a local close. Idempotent.
  virtual void close() = 0;
};

// Accepts connections at one address and serves them with the handlers given to listen().
class Listener {
 public:
  virtual ~Listener() = default;  // stops accepting and closes every accepted connection
  Listener() = default;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // The address peers connect to, with the actual port when 0 was asked for.
  virtual std::string address() const = 0;
  // Authenticated connections that are still open (to push messages to clients).
  virtual std::vector<std::shared_ptr<Connection>> connections() const = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Listens at "host:port" ("" or ":port" binds NetOptions::bind_host, 127.0.0.1 by
  // default; port 0 picks a free one). Throws Unavailable("127.0.0.1:5000 is already in
  // use") and InvalidArgument for a malformed address.
  virtual std::unique_ptr<Listener> listen(std::string_view address, Handlers handlers) = 0;

  // Connects and authenticates, within NetOptions::connect_timeout and handshake_timeout.
  // Throws Unavailable or Timeout naming the address, Unauthenticated on a secret mismatch.
  virtual std::shared_ptr<Connection> connect(std::string_view address, Handlers handlers = {},
                                              ConnectOptions options = {}) = 0;

  virtual const std::shared_ptr<NetContext>& context() const = 0;
};

}  // namespace trib::net
