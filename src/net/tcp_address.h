// "host:port" addresses, listening sockets and connect-with-timeout, with errors that name
// the address ("127.0.0.1:5000 is already in use").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/socket_io.h"

namespace trib::net {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  std::string to_string() const;
};

// "10.0.0.2:5000", "[::1]:5000", ":5000" or "" (host = default_host, port 0).
// Throws InvalidArgument naming the text.
HostPort parse_host_port(std::string_view address, std::string_view default_host);

// A non-blocking listening socket; `bound` gets the actual port when 0 was asked for.
Socket listen_on(const HostPort& address, HostPort& bound);

// Connects within `timeout`. Throws Unavailable (refused, unreachable) or Timeout, each
// naming the address tried.
Socket connect_to(const HostPort& address, std::chrono::milliseconds timeout);

// The peer's address as "ip:port", from getpeername.
std::string peer_address_of(int fd);

}  // namespace trib::net
