#include "app/rejoin_exec.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace trib::app {

namespace {

[[noreturn]] void stop(const std::string& line) {
  fmt::print(stderr, "trib: error: {}\n", line);
  std::fflush(nullptr);
  std::_Exit(3);
}

// This process's own arguments, as the kernel keeps them (NUL-separated).
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] != '\0') continue;
    args.push_back(all.substr(start, i - start));
    start = i + 1;
  }
  return args;
}

// Every descriptor from `from` to `to` is closed by the exec, whatever opened it (sockets,
// listeners, files of the old image must not outlive it: a listener left open would hold
// the port the new image binds). Marked rather than closed: other threads still run.
void close_on_exec(unsigned from, unsigned to) {
  if (from > to) return;
  if (::close_range(from, to, CLOSE_RANGE_CLOEXEC) == 0) return;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = std::atoi(e.path().filename().c_str());
    if (fd >= static_cast<int>(from) && static_cast<unsigned>(fd) <= to) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
}

// The secret at descriptor `fd` again, in a pipe the new image reads as the old one read it.
bool hand_secret_over(int fd, const std::string& hex) {
  int p[2];
  if (::pipe(p) != 0) return false;
  const std::string text = hex + "\n";
  const bool written = ::write(p[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(p[1]);
  if (!written) {
    ::close(p[0]);
    return false;
  }
  if (p[0] == fd) return true;
  const bool moved = ::dup2(p[0], fd) == fd;  // dup2 leaves the copy without FD_CLOEXEC
  ::close(p[0]);
  return moved;
}

}  // namespace

int rejoins_so_far() {
  const char* v = std::getenv(kRejoinsEnv);
  if (v == nullptr) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 && n < 1000000 ? static_cast<int>(n) : 0;
}

void rejoin_as_new_member(const std::string& why, const RejoinExec& how) {
  const int done = rejoins_so_far();
  if (done >= how.max_rejoins)
    stop(fmt::format("{}; stopping (this process rejoined {} time(s) already: cluster.max_restarts = {})", why, done,
                     how.max_rejoins));
  std::vector<std::string> args = own_arguments();
  if (args.empty()) stop(why + "; stopping (cannot read /proc/self/cmdline to start again)");
  fmt::print(stderr, "trib: {}; it rejoins the job as a new member ({} of {}, cluster.max_restarts)\n", why, done + 1,
             how.max_rejoins);
  std::fflush(nullptr);

  std::vector<std::string> env;
  const std::string prefix = std::string(kRejoinsEnv) + "=";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
  env.push_back(prefix + std::to_string(done + 1));

  if (how.secret_fd >= 0 && !hand_secret_over(how.secret_fd, how.secret_hex))
    stop(fmt::format("{}; stopping (cannot hand the cluster secret to descriptor {}: {})", why, how.secret_fd,
                     std::strerror(errno)));
  if (how.secret_fd >= 3) {
    close_on_exec(3, static_cast<unsigned>(how.secret_fd) - 1);
    close_on_exec(static_cast<unsigned>(how.secret_fd) + 1, ~0U);
  } else {
    close_on_exec(3, ~0U);
  }
  // The exec keeps this thread's signal mask: the new image must start with none blocked.
  sigset_t none;
  sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &none, nullptr);

  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  ::execve("/proc/self/exe", argv.data(), envp.data());
  stop(fmt::format("{}; stopping (cannot start this program again: {})", why, std::strerror(errno)));
}

}  // namespace trib::app
