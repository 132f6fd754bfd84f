#include "net/tcp_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "trib/core/error.h"

namespace trib::net {
namespace {

struct AddrInfoList {
  addrinfo* head = nullptr;
  ~AddrInfoList() {
    if (head) freeaddrinfo(head);
  }
};

// Resolves numerically when possible; a host name is looked up with getaddrinfo.
void resolve(const HostPort& address, bool passive, AddrInfoList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  std::string port = std::to_string(address.port);
  int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &out.head);
  TRIB_CHECK(rc == 0 && out.head != nullptr, Unavailable, "cannot resolve {}: {}",
             address.to_string(), gai_strerror(rc));
}

void set_int_option(int fd, int level, int name, int value) {
  ::setsockopt(fd, level, name, &value, sizeof value);
}

}  // namespace

Socket listen_on(const HostPort& address, HostPort& bound) {
  AddrInfoList info;
  resolve(address, true, info);
  Socket sock(::socket(info.head->ai_family, info.head->ai_socktype | SOCK_CLOEXEC, 0));
  TRIB_CHECK(sock.valid(), IoError, "cannot create a socket for {}: {}", address.to_string(),
             std::strerror(errno));
  // Lets a restarted server rebind while old connections linger in TIME_WAIT; a live
  // listener on the port still makes bind fail with EADDRINUSE.
  set_int_option(sock.fd(), SOL_SOCKET, SO_REUSEADDR, 1);
  if (::bind(sock.fd(), info.head->ai_addr, info.head->ai_addrlen) != 0) {
    TRIB_CHECK(errno != EADDRINUSE, Unavailable, "{} is already in use", address.to_string());
    throw Unavailable(
        fmt::format("cannot bind {}: {}", address.to_string(), std::strerror(errno)));
  }
  TRIB_CHECK(::listen(sock.fd(), 128) == 0, Unavailable, "cannot listen on {}: {}",
             address.to_string(), std::strerror(errno));
  set_nonblocking(sock.fd());
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  ::getsockname(sock.fd(), reinterpret_cast<sockaddr*>(&local), &len);
  bound = address;
  bound.port = ntohs(local.ss_family == AF_INET6
                         ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                         : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  return sock;
}

Socket connect_to(const HostPort& address, std::chrono::milliseconds timeout) {
  AddrInfoList info;
  resolve(address, false, info);
  Socket sock(::socket(info.head->ai_family, info.head->ai_socktype | SOCK_CLOEXEC, 0));
  TRIB_CHECK(sock.valid(), IoError, "cannot create a socket for {}: {}", address.to_string(),
             std::strerror(errno));
  set_nonblocking(sock.fd());
  set_int_option(sock.fd(), IPPROTO_TCP, TCP_NODELAY, 1);  // small requests go out at once
  int rc = ::connect(sock.fd(), info.head->ai_addr, info.head->ai_addrlen);
  if (rc != 0 && errno != EINPROGRESS) {
    throw Unavailable(
        fmt::format("cannot connect to {}: {}", address.to_string(), std::strerror(errno)));
  }
  if (rc != 0) {
    TRIB_CHECK(wait_ready(sock.fd(), POLLOUT, timeout), Timeout,
               "connecting to {} timed out after {} ms", address.to_string(), timeout.count());
    int error = 0;
    socklen_t len = sizeof error;
    ::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &error, &len);
    TRIB_CHECK(error == 0, Unavailable, "cannot connect to {}: {}", address.to_string(),
               std::strerror(error));
  }
  return sock;
}

std::string peer_address_of(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return "unknown address";
  char host[INET6_ADDRSTRLEN] = {};
  std::uint16_t port = 0;
  if (peer.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&peer);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&peer);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  }
  return HostPort{host, port}.to_string();
}

}  // namespace trib::net
