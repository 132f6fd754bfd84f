// The chaos benchmark's stand-in for a host's supervisor (systemd, Kubernetes, a script): it
// starts each role of a multi-host job as its own `trib` process, hands every line each prints
// to a callback with the time it arrived, and starts a process that a signal ended again with
// the very command that started it (what `Restart=on-failure` does). Nothing here knows about
// training: the benchmark decides what to kill and what the lines mean.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trib::bench {

using Clock = std::chrono::steady_clock;

class Supervisor {
 public:
  // `on_line(name, line, when)` runs on a reader thread, one call at a time.
  using LineFn = std::function<void(const std::string& name, const std::string& line, Clock::time_point when)>;

  Supervisor(std::string binary, LineFn on_line) : binary_(std::move(binary)), on_line_(std::move(on_line)) {}
  ~Supervisor() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (auto& [name, c] : children_)
        if (c->running) ::kill(c->pid, SIGKILL);
    }
    for (auto& [name, c] : children_) {
      if (c->reader.joinable()) c->reader.join();
      for (std::thread& t : c->finished) t.join();
    }
  }

  // Starts `name` as `trib ARGS...`; with `restart`, again whenever a signal ends it.
  void start(const std::string& name, std::vector<std::string> args, bool restart) {
    std::lock_guard lock(mu_);
    auto& slot = children_[name];
    if (slot) return;  // started once: its restarts are this class's business
    slot = std::make_unique<Child>();
    slot->args = std::move(args);
    slot->restart = restart;
    spawn_locked(name, *slot);
  }

  // Sends `sig` to `name`'s current process; the time it was sent, or nullopt when not running.
  std::optional<Clock::time_point> signal(const std::string& name, int sig) {
    std::lock_guard lock(mu_);
    auto it = children_.find(name);
    if (it == children_.end() || !it->second->running) return std::nullopt;
    ::kill(it->second->pid, sig);
    return Clock::now();
  }

  // Waits until no process is running (restarts included), or `limit` passes: true if none is.
  bool wait_all(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] {
      for (auto& [name, c] : children_)
        if (c->running) return false;
      return true;
    });
  }

  // How `name`'s last process ended: its exit code, 128 + a signal, or -1 while running.
  int exit_code(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = children_.find(name);
    return it == children_.end() || it->second->running ? -1 : it->second->exit_code;
  }
  int restarts(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = children_.find(name);
    return it == children_.end() ? 0 : it->second->restarts;
  }

 private:
  struct Child {
    std::vector<std::string> args;
    bool restart = false;
    pid_t pid = -1;
    bool running = false;
    int exit_code = -1;
    int restarts = 0;
    std::thread reader;
    std::vector<std::thread> finished;  // readers of earlier processes of this name
  };

  void spawn_locked(const std::string& name, Child& c) {
    // Built before fork: the child of a threaded process only dups and execs.
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary_.c_str()));
    for (const std::string& a : c.args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::execv(binary_.c_str(), argv.data());
      std::_Exit(127);
    }
    ::close(fds[1]);
    c.pid = pid;
    c.running = pid > 0;
    if (pid < 0) {
      ::close(fds[0]);
      return;
    }
    if (c.reader.joinable()) c.finished.push_back(std::move(c.reader));
    c.reader = std::thread([this, name, fd = fds[0], pid] { read_until_exit(name, fd, pid); });
  }

  void read_until_exit(const std::string& name, int fd, pid_t pid) {
    FILE* in = ::fdopen(fd, "r");
    char buf[8192];
    while (std::fgets(buf, sizeof buf, in) != nullptr) {
      std::string line(buf);
      if (!line.empty() && line.back() == '\n') line.pop_back();
      const Clock::time_point now = Clock::now();
      std::lock_guard lines(line_mu_);
      on_line_(name, line, now);
    }
    std::fclose(in);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::lock_guard lock(mu_);
    Child& c = *children_[name];
    if (c.pid != pid) return;  // an earlier process of this name
    c.running = false;
    c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (WIFSIGNALED(status) && c.restart && !stopping_) {
      ++c.restarts;
      spawn_locked(name, c);  // this thread's handle moves to c.finished
    }
    cv_.notify_all();
  }

  std::string binary_;
  LineFn on_line_;
  std::mutex mu_;
  std::mutex line_mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::unique_ptr<Child>> children_;
};

}  // namespace trib::bench
