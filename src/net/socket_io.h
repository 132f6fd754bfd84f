// Blocking-with-deadline I/O on non-blocking sockets: every wait is a poll() bounded by a
// timeout, partial reads and writes are resumed, EINTR is retried. Errors name the peer.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>

namespace trib::net {

// Owns a file descriptor.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  void reset();
  // Wakes any thread blocked on this socket (its reads see end of stream); keeps the fd.
  void shutdown_both() noexcept;

 private:
  int fd_ = -1;
};

void set_nonblocking(int fd);

// Waits until `fd` is ready for `events` (POLLIN/POLLOUT); false if `timeout` passed first.
bool wait_ready(int fd, short events, std::chrono::milliseconds timeout);

// Writes every byte described by `iov` (advanced in place) with sendmsg, without copying.
// A peer that accepts nothing for `idle_timeout` raises Timeout; a broken connection
// raises Unavailable. Returns the number of bytes written.
// `more`: further bytes of the same frame follow at once (MSG_MORE), so the kernel need not
// push a partial segment after each piece of a frame written in several calls.
std::size_t write_all(int fd, std::span<iovec> iov, std::chrono::milliseconds idle_timeout,
                      const std::string& peer, bool more = false);

// Called with each piece of received bytes as it lands, while it is still in cache (it may
// rewrite them: decryption in place).
using PieceObserver = std::function<void(std::span<std::byte>)>;

// Reads exactly out.size() bytes. `idle_timeout` bounds each silence (Timeout); end of
// stream raises Unavailable. Each recv is capped at `max_piece` bytes so that `on_piece`
// sees data that is still cache-hot.
void read_exact(int fd, std::span<std::byte> out, std::chrono::milliseconds idle_timeout,
                const std::string& peer, const PieceObserver& on_piece = {},
                std::size_t max_piece = std::size_t{1} << 18);

}  // namespace trib::net
