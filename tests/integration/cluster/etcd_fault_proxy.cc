#include "integration/cluster/etcd_fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trib/core/error.h"

namespace trib::cluster::testing {

namespace {

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

bool send_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

EtcdFaultProxy::EtcdFaultProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw IoError("fault proxy: cannot listen on loopback");
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { serve(); });
}

EtcdFaultProxy::~EtcdFaultProxy() {
  stop_ = true;
  acceptor_.join();
  for (auto& t : relays_) t.join();
  ::close(listen_fd_);
}

void EtcdFaultProxy::drop_replies_to(const std::string& path, int n) {
  path_ = path;
  to_drop_ = n;
}

void EtcdFaultProxy::hold_requests_containing(const std::string& needle) {
  hold_ = needle;
  holding_ = true;
}

void EtcdFaultProxy::release() { holding_ = false; }

void EtcdFaultProxy::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) != 1) continue;
    int client = ::accept(listen_fd_, nullptr, nullptr);
    if (client >= 0) relays_.emplace_back([this, client] { relay(client); });
  }
}

// One client connection (curl opens one per request): bytes both ways until either side
// closes, except for a reply marked to be lost.
void EtcdFaultProxy::relay(int client) {
  int upstream = connect_loopback(upstream_port_);
  bool first = true, dropping = false, held = false;
  char buf[16384];
  pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
  while (upstream >= 0 && !stop_) {
    if (::poll(fds, 2, 50) <= 0) continue;
    if (fds[0].revents) {
      ssize_t n = ::recv(client, buf, sizeof buf, 0);
      if (n <= 0) break;
      std::string_view chunk(buf, static_cast<std::size_t>(n));
      if (first && to_drop_.load() > 0 && chunk.find(path_) != std::string_view::npos) {
        int left = to_drop_.load();
        while (left > 0 && !to_drop_.compare_exchange_weak(left, left - 1)) {
        }
        dropping = left > 0;
      }
      if (!held && holding_ && chunk.find(hold_) != std::string_view::npos) {
        held = true;
        ++held_;
        while (holding_ && !stop_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      first = false;
      if (!send_all(upstream, buf, static_cast<std::size_t>(n))) break;
    }
    if (fds[1].revents) {
      ssize_t n = ::recv(upstream, buf, sizeof buf, 0);
      if (n <= 0) break;
      if (dropping) {  // the member has answered, so it applied the request: lose the answer
        ++dropped_;
        break;
      }
      if (!send_all(client, buf, static_cast<std::size_t>(n))) break;
    }
  }
  if (upstream >= 0) ::close(upstream);
  ::close(client);
}

}  // namespace trib::cluster::testing
