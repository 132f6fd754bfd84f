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

bool TcpListener::admit(const std::string& source_host) {
  // Connections still in their handshake each hold threads for up to the handshake
  // timeout. Past a limit, the oldest one that has sent nothing yet (an idle connection:
  // a real client sends its hello at once) makes room; if every one has, the newcomer is
  // refused and its client retries (NetOptions::connect_retry).
  const NetOptions& o = context_->options();
  std::lock_guard lock(mu_);
  std::size_t total = 0, from_source = 0;
  for (const auto& c : connections_) {
    if (!c->pending_handshake()) continue;
    ++total;
    if (c->source_host() == source_host) ++from_source;
  }
  const bool source_full = from_source >= o.max_pending_per_source;
  if (!source_full && total < o.max_pending_handshakes) return true;
  for (const auto& c : connections_) {
    if (!c->pending_handshake() || c->heard_hello()) continue;
    if (source_full && c->source_host() != source_host) continue;
    c->close();  // its handshake fails at once (and is counted); it is reaped as usual
    context_->log_untrusted("idle pre-authentication connection(s) dropped",
                            fmt::format("dropped {}: it sent nothing while pre-authentication "
                                        "slots ran short",
                                        c->peer().to_string()));
    return true;
  }
  return false;
}

void TcpListener::accept_main() {
  while (!stopping_) {
    try {
      if (wait_ready(socket_.fd(), POLLIN, kAcceptPoll)) accept_ready();
    } catch (const std::exception& e) {
      context_->log(fmt::format("listener {}: {}", address(), e.what()));
    }
    take_finished();  // destroyed here, outside the lock
    context_->flush_untrusted_log();
  }
}

void TcpListener::accept_ready() {
  for (;;) {
    int fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK || stopping_) return;
      // Per-connection errors (ECONNABORTED, EMFILE): log, keep serving.
      context_->log_untrusted("accept() failure(s)", fmt::format("accept on {} failed: {}",
                                                                 address(), std::strerror(errno)));
      return;
    }
    Socket accepted(fd);
    std::string from = peer_address_of(fd);
    if (!admit(parse_host_port(from, "").host)) {
      context_->log_untrusted(
          "connection(s) refused with every pre-authentication slot in a handshake",
          fmt::format("refused connection from {}: {} handshakes already pending ({} per "
                      "source address)",
                      from, context_->options().max_pending_handshakes,
                      context_->options().max_pending_per_source));
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
