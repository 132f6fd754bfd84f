#include "trib/net/tcp_transport.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "net/handshake.h"
#include "net/tcp_address.h"
#include "net/tcp_connection.h"
#include "net/tcp_listener.h"

namespace trib::net {

TcpTransport::TcpTransport(std::shared_ptr<NetContext> context) : context_(std::move(context)) {
  TRIB_CHECK(context_ != nullptr, InvalidArgument, "TcpTransport needs a NetContext");
}

std::unique_ptr<Listener> TcpTransport::listen(std::string_view address, Handlers handlers) {
  HostPort wanted = parse_host_port(address, context_->options().bind_host);
  HostPort bound;
  Socket socket = listen_on(wanted, bound);
  return std::make_unique<TcpListener>(context_, std::move(socket), bound, std::move(handlers));
}

std::shared_ptr<Connection> TcpTransport::connect(std::string_view address, Handlers handlers,
                                                  ConnectOptions options) {
  const NetOptions& o = context_->options();
  HostPort target = parse_host_port(address, o.bind_host);
  const MacAlgorithm protection = frame_protection(o, options);
  // Backoff from 50 ms, doubling to 1 s, within connect_retry: a server still starting, or
  // one whose pre-authentication slots are taken by idle connections, is tried again. A
  // wrong secret (Unauthenticated) or a bad address (InvalidArgument) is not.
  using Clock = std::chrono::steady_clock;
  const auto give_up = Clock::now() + o.connect_retry;
  std::chrono::milliseconds backoff{50};
  for (;;) {
    try {
      Socket socket = connect_to(target, o.connect_timeout);
      HandshakeResult handshake =
          client_handshake(socket.fd(), *context_, protection, target.to_string());
      return TcpConnection::start_authenticated(context_, std::move(socket),
                                                std::move(handshake), std::move(handlers));
    } catch (const Unauthenticated&) {
      throw;
    } catch (const Unavailable&) {
      if (Clock::now() + backoff >= give_up) throw;
    } catch (const Timeout&) {
      if (Clock::now() + backoff >= give_up) throw;
    } catch (const Corruption&) {  // a handshake cut short looks malformed
      if (Clock::now() + backoff >= give_up) throw;
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace trib::net
