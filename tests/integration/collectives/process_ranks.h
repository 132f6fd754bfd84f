// Test support: a group of N real processes on loopback TCP. fork() children each listen
// on a free port, learn every address through pipes, form the group, run the test's body
// and exit with its result; whatever they write with say() comes back to the parent.
// The parent has a hard deadline: children still running then are killed and reported.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "trib/collectives/group.h"
#include "trib/net/tcp_transport.h"

namespace trib::collectives::testing {

struct Child {
  pid_t pid = -1;
  int to_child = -1, from_child = -1;
  std::string output;  // everything the child said
  int status = -1;     // from waitpid; -1 while running
  bool exited_ok() const { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

class ProcessRanks {
 public:
  using Body = std::function<int(Group& group, const std::function<void(const std::string&)>& say)>;

  ProcessRanks(int n, const Body& body, net::NetOptions net = {}, GroupOptions base = {}) : children_(n) {
    const std::string secret = net::ClusterSecret::generate().to_hex();
    for (int r = 0; r < n; ++r) {
      int down[2], up[2];
      if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe failed");
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(down[1]);
        ::close(up[0]);
        std::_Exit(child_main(r, n, secret, down[0], up[1], body, net, base));
      }
      ::close(down[0]);
      ::close(up[1]);
      children_[static_cast<std::size_t>(r)] = Child{pid, down[1], up[0], "", -1};
    }
    std::string addresses;
    for (auto& c : children_) addresses += read_line(c) + "\n";
    for (auto& c : children_) write_all(c.to_child, addresses);
  }

  ~ProcessRanks() {
    for (auto& c : children_) {
      if (c.status < 0) {
        ::kill(c.pid, SIGKILL);
        ::waitpid(c.pid, &c.status, 0);
      }
      ::close(c.to_child);
      ::close(c.from_child);
    }
  }

  Child& operator[](int r) { return children_[static_cast<std::size_t>(r)]; }
  int size() const { return static_cast<int>(children_.size()); }

  // Blocks until rank r says a line beginning with `prefix` (or ends); returns the line.
  std::string wait_for_line(int r, const std::string& prefix) {
    for (;;) {
      std::string line = read_line(children_[static_cast<std::size_t>(r)]);
      if (line.empty() || line.rfind(prefix, 0) == 0) return line;
    }
  }

  void signal(int r, int sig) { ::kill(children_[static_cast<std::size_t>(r)].pid, sig); }

  // Waits for every child (collecting what it said) until `deadline`; returns false if some
  // were still running then (they are killed).
  bool wait(std::chrono::milliseconds deadline) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    bool all = true;
    for (auto& c : children_) {
      while (c.status < 0) {
        drain(c);
        int st = 0;
        if (::waitpid(c.pid, &st, WNOHANG) == c.pid) {
          c.status = st;
          break;
        }
        if (std::chrono::steady_clock::now() > end) {
          ::kill(c.pid, SIGKILL);
          ::waitpid(c.pid, &c.status, 0);
          all = false;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      drain(c);
    }
    return all;
  }

 private:
  static void write_all(int fd, const std::string& s) {
    std::size_t done = 0;
    while (done < s.size()) {
      ssize_t n = ::write(fd, s.data() + done, s.size() - done);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }

  static std::string read_fd_line(int fd) {
    std::string line;
    char ch;
    while (::read(fd, &ch, 1) == 1 && ch != '\n') line += ch;
    return line;
  }

  std::string read_line(Child& c) {
    std::string line = read_fd_line(c.from_child);
    c.output += line + "\n";
    return line;
  }

  // Whatever the child wrote so far, without blocking.
  static void drain(Child& c) {
    for (;;) {
      pollfd p{c.from_child, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return;
      char buf[4096];
      ssize_t n = ::read(c.from_child, buf, sizeof buf);
      if (n <= 0) return;
      c.output.append(buf, static_cast<std::size_t>(n));
    }
  }

  static int child_main(int rank, int n, const std::string& secret, int in, int out, const Body& body,
                        const net::NetOptions& net, GroupOptions base) {
    auto say = [out](const std::string& line) { write_all(out, line + "\n"); };
    try {
      auto ctx = net::NetContext::create(net::ClusterSecret::from_hex(secret), net::PeerIdentity{"worker", rank, ""},
                                         net, [](std::string_view) {});
      auto transport = std::make_shared<net::TcpTransport>(ctx);
      Endpoint endpoint = Endpoint::listen(transport, "127.0.0.1:0");
      say(endpoint.address());
      base.rank = rank;
      base.size = n;
      base.addresses.clear();
      for (int r = 0; r < n; ++r) base.addresses.push_back(read_fd_line(in));
      auto group = Group::form(std::move(endpoint), base);
      int code = body(*group, say);
      group.reset();
      return code;
    } catch (const std::exception& e) {
      say(std::string("error: ") + e.what());
      return 2;
    }
  }

  std::vector<Child> children_;
};

}  // namespace trib::collectives::testing
