#include "cluster/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <utility>

#include "trib/core/error.h"

extern char** environ;

namespace trib::cluster {

ChildProcess::ChildProcess(std::string name, const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env)
    : name_(std::move(name)) {
  TRIB_CHECK(!argv.empty(), InvalidArgument, "ChildProcess '{}' needs a program", name_);
  int fds[2];
  TRIB_CHECK(::pipe2(fds, O_CLOEXEC) == 0, IoError, "pipe for {}: {}", name_, strerror(errno));
  // Build everything the child needs before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s = *e;
    auto eq = s.find('=');
    if (eq != std::string::npos && env.count(s.substr(0, eq))) continue;
    env_strings.push_back(std::move(s));
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  pid_ = ::fork();
  TRIB_CHECK(pid_ >= 0, IoError, "cannot start {}: fork failed: {}", name_, strerror(errno));
  if (pid_ == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::setpgid(0, 0);  // its own group: a terminal's Ctrl-C reaches the launcher only, which forwards it
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a launcher killed outright takes its children along
    // The launcher blocks signals it takes on a thread of its own (core/termination_signal.h);
    // a child starts with none blocked, as a program run from a shell does.
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(args[0], args.data(), envp.data());
    const char msg[] = "cannot exec the trib binary\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  out_fd_ = fds[0];
  ::fcntl(out_fd_, F_SETFL, ::fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
}

ChildProcess::ChildProcess(std::string name, const std::function<int()>& body) : name_(std::move(name)) {
  int fds[2];
  TRIB_CHECK(::pipe2(fds, O_CLOEXEC) == 0, IoError, "pipe for {}: {}", name_, strerror(errno));
  std::fflush(nullptr);  // nothing buffered here is written twice, by the child too
  pid_ = ::fork();
  TRIB_CHECK(pid_ >= 0, IoError, "cannot start {}: fork failed: {}", name_, strerror(errno));
  if (pid_ == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // As after exec: SIGTERM ends it (the parent's handler and its blocked mask are the
    // parent's business), no signal blocked.
    ::signal(SIGTERM, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int status = 1;
    try {
      status = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trib: error: %s\n", e.what());
    }
    std::fflush(nullptr);
    ::_exit(status);  // not exit(): the parent's atexit handlers and static objects are not the child's
  }
  ::close(fds[1]);
  out_fd_ = fds[0];
  ::fcntl(out_fd_, F_SETFL, ::fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
}

ChildProcess::~ChildProcess() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
}

std::vector<std::string> ChildProcess::read_lines() {
  std::vector<std::string> lines;
  if (out_fd_ < 0) return lines;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n > 0) {
      partial_.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) {  // end of output
      ::close(out_fd_);
      out_fd_ = -1;
    }
    break;  // EAGAIN (nothing more now) or closed
  }
  std::size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    lines.push_back(partial_.substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  if (out_fd_ < 0 && !partial_.empty()) lines.push_back(std::exchange(partial_, {}));
  return lines;
}

std::optional<int> ChildProcess::poll_exit() {
  if (status_) return status_;
  int st;
  rusage usage{};
  pid_t r = ::wait4(pid_, &st, WNOHANG, &usage);
  if (r == pid_) {
    status_ = st;
    cpu_s_ = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
             1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  }
  return status_;
}

bool ChildProcess::succeeded() const { return status_ && WIFEXITED(*status_) && WEXITSTATUS(*status_) == 0; }

int ChildProcess::exit_status() const { return status_ && WIFEXITED(*status_) ? WEXITSTATUS(*status_) : -1; }

int ChildProcess::term_signal() const { return status_ && WIFSIGNALED(*status_) ? WTERMSIG(*status_) : 0; }

std::string ChildProcess::describe_exit() const {
  if (!status_) return "is still running";
  if (WIFEXITED(*status_)) return fmt::format("exited with status {}", WEXITSTATUS(*status_));
  if (WIFSIGNALED(*status_))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(*status_), strsignal(WTERMSIG(*status_)));
  return "ended";
}

void ChildProcess::signal(int sig) {
  if (!status_ && pid_ > 0) ::kill(pid_, sig);
}

}  // namespace trib::cluster
