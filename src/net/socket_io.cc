#include "net/socket_io.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trib/core/error.h"

namespace trib::net {

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown_both() noexcept {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  TRIB_CHECK(flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0, IoError,
             "cannot make socket non-blocking: {}", std::strerror(errno));
}

bool wait_ready(int fd, short events, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (n > 0) return true;  // ready, or an error/hangup the next call will report
    if (n == 0) return false;
    if (errno != EINTR) throw IoError(fmt::format("poll failed: {}", std::strerror(errno)));
  }
}

std::size_t write_all(int fd, std::span<iovec> iov, std::chrono::milliseconds idle_timeout,
                      const std::string& peer, bool more) {
  std::size_t written = 0;
  while (!iov.empty()) {
    if (iov.front().iov_len == 0) {
      iov = iov.subspan(1);
      continue;
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = std::min<std::size_t>(iov.size(), IOV_MAX);
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        TRIB_CHECK(wait_ready(fd, POLLOUT, idle_timeout), Timeout,
                   "{} accepted no data for {} ms", peer, idle_timeout.count());
        continue;
      }
      throw Unavailable(fmt::format("sending to {} failed: {}", peer, std::strerror(errno)));
    }
    // Partial write: drop the iovecs fully sent, advance into the first unfinished one.
    auto left = static_cast<std::size_t>(n);
    written += left;
    while (left > 0 && left >= iov.front().iov_len) {
      left -= iov.front().iov_len;
      iov = iov.subspan(1);
    }
    if (left > 0) {
      iov.front().iov_base = static_cast<char*>(iov.front().iov_base) + left;
      iov.front().iov_len -= left;
    }
  }
  return written;
}

void read_exact(int fd, std::span<std::byte> out, std::chrono::milliseconds idle_timeout,
                const std::string& peer, const PieceObserver& on_piece, std::size_t max_piece) {
  std::size_t done = 0;
  while (done < out.size()) {
    std::size_t want = std::min(out.size() - done, max_piece);
    ssize_t n = ::recv(fd, out.data() + done, want, 0);
    if (n > 0) {
      if (on_piece) on_piece(out.subspan(done, static_cast<std::size_t>(n)));
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) {
      if (done == 0) throw Unavailable(fmt::format("{} closed the connection", peer));
      throw Unavailable(fmt::format("{} closed the connection after {} of {} bytes", peer, done,
                                    out.size()));
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      TRIB_CHECK(wait_ready(fd, POLLIN, idle_timeout), Timeout,
                 "no data from {} for {} ms{}", peer, idle_timeout.count(),
                 done > 0 ? fmt::format(" (stalled after {} of {} bytes)", done, out.size())
                          : std::string());
      continue;
    }
    throw Unavailable(fmt::format("receiving from {} failed: {}", peer, std::strerror(errno)));
  }
}

}  // namespace trib::net
