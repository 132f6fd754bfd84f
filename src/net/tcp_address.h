// Listening sockets and connect-with-timeout for "host:port" addresses (host_port.h), with errors that name
// the address ("127.0.0.1:5000 is already in use").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/socket_io.h"
#include "trib/net/host_port.h"

namespace trib::net {

// A non-blocking listening socket; `bound` gets the actual port when 0 was asked for.
Socket listen_on(const HostPort& address, HostPort& bound);

// Connects within `timeout`. Throws Unavailable (refused, unreachable) or Timeout, each
// naming the address tried.
Socket connect_to(const HostPort& address, std::chrono::milliseconds timeout);

// The peer's address as "ip:port", from getpeername.
std::string peer_address_of(int fd);

}  // namespace trib::net
