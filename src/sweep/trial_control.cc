#include "trial_control.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trib/core/error.h"

namespace trib::sweep {

ControlChannel::~ControlChannel() {
  if (fd_ >= 0) ::close(fd_);
}

std::pair<int, int> ControlChannel::socket_pair() {
  int fds[2];
  TRIB_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, IoError,
             "socketpair for a forked trial: {}", std::strerror(errno));
  return {fds[0], fds[1]};
}

bool ControlChannel::send(const std::string& line) {
  const std::string data = line + "\n";
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

ControlChannel::Read ControlChannel::read_some(bool wait) {
  if (closed_) return Read::closed;
  char buf[256];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, wait ? 0 : MSG_DONTWAIT);
    if (n > 0) {
      partial_.append(buf, static_cast<std::size_t>(n));
      return Read::data;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Read::nothing;
    closed_ = true;  // 0: the other end closed; anything else: as good as closed
    return Read::closed;
  }
}

std::vector<std::string> ControlChannel::poll_lines() {
  while (read_some(false) == Read::data) {
  }
  std::vector<std::string> lines;
  for (std::size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
    lines.push_back(partial_.substr(0, nl));
    partial_.erase(0, nl + 1);
  }
  return lines;
}

std::optional<std::string> ControlChannel::wait_line() {
  for (;;) {
    if (std::size_t nl = partial_.find('\n'); nl != std::string::npos) {
      std::string line = partial_.substr(0, nl);
      partial_.erase(0, nl + 1);
      return line;
    }
    if (read_some(true) == Read::closed) return std::nullopt;
  }
}

}  // namespace trib::sweep
