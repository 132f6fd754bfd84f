#include "net/tcp_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace trib::net {
namespace {

// How often the accept thread looks at the stop flag and reaps finished connections.
constexpr std::chrono::milliseconds kAcceptPoll{100};
// Connections still in their handshake (each holds threads and waits up to the handshake
// timeout): beyond this many, new sockets are closed at once, so a flood of idle
// connections cannot exhaust threads.
constexpr std::size_t kMaxPendingHandshakes = 64;

}  // namespace

TcpListener::TcpListener(std::shared_ptr<NetContext> context, Socket socket, HostPort bound,
                         Handlers handlers)
    : context_(std::move(context)), socket_(std::move(socket)), bound_(std::move(bound)),
      handlers_(std::move(handlers)), accept_thread_([this] { accept_main(); }) {}

TcpListener::~TcpListener() {
  stopping_ = true;
  socket_.shutdown_both();
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<std::shared_ptr<TcpConnection>> connections;
  {
    std::lock_guard lock(mu_);
    connections.swap(connections_);
  }
  for (auto& c : connections) c->close();
  connections.clear();  // joins each connection's threads
}

std::vector<std::shared_ptr<Connection>> TcpListener::connections() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<Connection>> open;
  for (const auto& c : connections_) {
    if (c->is_open()) open.push_back(c);
  }
  return open;
}

std::vector<std::shared_ptr<TcpConnection>> TcpListener::take_finished() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<TcpConnection>> finished;
  std::erase_if(connections_, [&](const std::shared_ptr<TcpConnection>& c) {
    if (!c->finished()) return false;
    finished.push_back(c);
    return true;
  });
  return finished;
}

std::size_t TcpListener::pending_handshakes() const {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(std::count_if(
      connections_.begin(), connections_.end(),
      [](const auto& c) { return !c->is_open() && !c->finished(); }));
}

void TcpListener::accept_main() {
  while (!stopping_) {
    try {
      if (wait_ready(socket_.fd(), POLLIN, kAcceptPoll)) accept_ready();
    } catch (const std::exception& e) {
      context_->log(fmt::format("listener {}: {}", address(), e.what()));
    }
    take_finished();  // destroyed here, outside the lock
  }
}

void TcpListener::accept_ready() {
  for (;;) {
    int fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK || stopping_) return;
      // Per-connection errors (ECONNABORTED, EMFILE): log, keep serving.
      context_->log(fmt::format("accept on {} failed: {}", address(), std::strerror(errno)));
      return;
    }
    Socket accepted(fd);
    std::string from = peer_address_of(fd);
    if (pending_handshakes() >= kMaxPendingHandshakes) {
      context_->log(fmt::format("refused connection from {}: {} handshakes already pending",
                                from, kMaxPendingHandshakes));
      context_->stats().handshake_failures++;
      continue;  // `accepted` closes the socket
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto connection =
        TcpConnection::start_accepted(context_, std::move(accepted), from, handlers_);
    std::lock_guard lock(mu_);
    connections_.push_back(std::move(connection));
  }
}

}  // namespace trib::net
