#include "trib/net/tcp_transport.h"

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
  Socket socket = connect_to(target, o.connect_timeout);
  HandshakeResult handshake =
      client_handshake(socket.fd(), *context_, options.mac.value_or(o.mac), target.to_string());
  return TcpConnection::start_authenticated(context_, std::move(socket), std::move(handshake),
                                            std::move(handlers));
}

}  // namespace trib::net
