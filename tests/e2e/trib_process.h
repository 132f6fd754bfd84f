// `trib` as separate processes, the way a user or an operator runs it (one command, or one
// role per host): a process's output is gathered as it comes, and tests wait on what it
// printed. Shared by every e2e test binary.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/child_process.h"

namespace trib::testing {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A program's full path from PATH (ChildProcess execs a path), or "" when absent.
inline std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  dirs += ":/usr/sbin:/sbin";
  for (std::size_t b = 0, e; b <= dirs.size(); b = e + 1) {
    e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    fs::path p = fs::path(dirs.substr(b, e - b)) / name;
    if (!p.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// A `trib` process (or `trib` under a wrapper: `ip netns exec NS`, `mpirun -np 3`).
class Trib {
 public:
  Trib(std::string name, std::vector<std::string> args, std::vector<std::string> wrapper = {},
       std::map<std::string, std::string> env = {})
      : name_(std::move(name)) {
    args.insert(args.begin(), TRIB_BINARY);
    args.insert(args.begin(), wrapper.begin(), wrapper.end());
    process_ = std::make_unique<cluster::ChildProcess>(name_, args, env);
  }
  // A wrapper (mpirun) may have children of its own: SIGTERM lets it take them down.
  ~Trib() {
    if (exited()) return;
    process_->signal(SIGTERM);
    auto until = Clock::now() + 3s;
    while (!exited() && Clock::now() < until) std::this_thread::sleep_for(20ms);
  }

  // Gathers what the process printed since the last call; returns those lines.
  std::vector<std::string> pump() {
    std::vector<std::string> lines = process_->read_lines();
    for (const std::string& line : lines) output_ += line + "\n";
    return lines;
  }
  bool exited() {
    pump();
    return ended();
  }
  // Whether it has exited and its output is all read (gathered by pump()).
  bool ended() { return process_->poll_exit().has_value() && process_->output_closed(); }
  // The exit status, or 128 + the signal that ended it.
  int exit_code() {
    int st = *process_->poll_exit();
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  bool printed(const std::string& text) const { return output_.find(text) != std::string::npos; }
  std::string find(const std::string& pattern) const {
    std::smatch m;
    return std::regex_search(output_, m, std::regex(pattern)) ? m[1].str() : std::string();
  }
  const std::string& output() const { return output_; }
  const std::string& name() const { return name_; }
  void signal(int sig) { process_->signal(sig); }

 private:
  std::string name_;
  std::unique_ptr<cluster::ChildProcess> process_;
  std::string output_;
};

// Pumps every process until `done` holds or the limit passes; returns done().
inline bool wait_until(const std::vector<Trib*>& procs, const std::function<bool()>& done,
                       std::chrono::milliseconds limit) {
  auto until = Clock::now() + limit;
  for (;;) {
    for (Trib* p : procs) p->pump();
    if (done()) return true;
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
}

inline bool wait_exit(Trib& p, std::chrono::milliseconds limit, const std::vector<Trib*>& others = {}) {
  std::vector<Trib*> all = others;
  all.push_back(&p);
  return wait_until(all, [&] { return p.exited(); }, limit);
}

// `trib ARGS...` run to its end, with what it printed. Past `limit` it is killed and the
// test fails. `on_line` sees each line as it comes, and "" on every 10 ms tick (for callbacks
// that watch files rather than lines); it may signal the process. `env` is added to its environment.
struct TribRun {
  int exit_code = -1;  // 128 + the signal that ended it
  std::string output;
  double seconds = 0;
};
inline TribRun run_trib(const std::vector<std::string>& args, std::chrono::seconds limit,
                        const std::function<void(const std::string& line, Trib&)>& on_line = {},
                        const std::map<std::string, std::string>& env = {}) {
  const auto start = Clock::now();
  Trib p("trib", args, {}, env);
  for (;;) {
    const bool ended = p.ended();  // before the last pump, so that no line is missed
    for (const std::string& line : p.pump())
      if (on_line) on_line(line, p);
    if (ended) break;
    if (on_line) on_line("", p);
    if (Clock::now() - start > limit) {
      p.signal(SIGKILL);
      ADD_FAILURE() << "trib " << (args.empty() ? "" : args[0]) << " did not finish within " << limit.count()
                    << " s\n" << p.output();
      wait_exit(p, 5s);
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  TribRun r;
  r.exit_code = p.ended() ? p.exit_code() : 137;
  r.output = p.output();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

// Everything the processes printed, for failure messages.
inline std::string transcript(const std::vector<Trib*>& procs) {
  std::string out;
  for (Trib* p : procs) out += "---- " + p->name() + "\n" + p->output();
  return out;
}

inline std::size_t line_count(const std::string& text) {
  std::size_t n = 0;
  for (std::size_t b = 0, e; b < text.size(); b = e + 1) {
    e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    if (e > b) ++n;
  }
  return n;
}

// A fresh directory under the temporary directory, removed when the test ends.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("trib_e2e_cluster_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  // Private (mode 600), as a cluster secret file must be; harmless for the others.
  std::string file(const std::string& name, const std::string& text) const {
    fs::path p = path_ / name;
    std::ofstream(p) << text;
    fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
    return p.string();
  }

 private:
  fs::path path_;
};

// The step of the newest published checkpoint (one with a manifest) in a run directory, or -1.
inline int newest_checkpoint(const fs::path& run_dir) {
  int newest = -1;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(run_dir / "checkpoints", ec))
    if (e.path().filename().string().starts_with("ckpt-") && fs::exists(e.path() / "manifest.json"))
      newest = std::max(newest, std::stoi(e.path().filename().string().substr(5)));
  return newest;
}

inline const char* kSecretHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
inline const char* kOtherSecretHex = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

// A job small enough to train in a few seconds on one core per process: a tiny MLP on the
// first 2,000 Fashion-MNIST images, asynchronous parameter servers.
inline std::string tiny_job(const std::string& cluster_section) {
  return R"(name: tiny_cluster
model:
  input: [1, 28, 28]
  classes: 10
  layers:
    - {type: flatten}
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 10}
data:
  format: idx
  train:
    images: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz
  test:
    images: /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
  train_subset: 2000
  test_subset: 500
optimizer: {name: adam, lr: 0.002}
training: {steps: 40, batch: 32, train_metrics: false}
threads: {intra: 1, inter: 1}
strategy: {name: ps, mode: async}
)" + cluster_section;
}

// tiny_job() with `strategy` (a YAML mapping, e.g. "{name: allreduce}") in place of its
// asynchronous parameter servers.
inline std::string tiny_job_with(const std::string& strategy, const std::string& cluster_section) {
  const std::string servers = "strategy: {name: ps, mode: async}";
  std::string yaml = tiny_job(cluster_section);
  return yaml.replace(yaml.find(servers), servers.size(), "strategy: " + strategy);
}

// Binds `fd` to `port` (0: one of the kernel's choice) on 127.0.0.1; returns the port, or -1.
inline int bind_loopback(int fd, int port = 0) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// A port free on 127.0.0.1 right now (the kernel's choice; a test binds it soon after).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = bind_loopback(fd);
  ::close(fd);
  return port;
}

// The first of `count` consecutive ports free on 127.0.0.1 now, below the kernel's ephemeral
// range (32768 and up by default), where other tests' connections take their local ports:
// a base from free_port() plus offsets could land on one of those.
inline int free_port_run(int count) {
  for (int base = 20000 + static_cast<int>(::getpid() % 400) * 25; base + count < 32000; base += count) {
    bool all = true;
    for (int p = base; p < base + count && all; ++p) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<std::uint16_t>(p));
      all = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(fd);
    }
    if (all) return base;
  }
  return -1;
}

// A port on 127.0.0.1 that something else listens on, until this is destroyed: what a role
// meets when its port is taken.
class HeldPort {
 public:
  // `port` 0: one of the kernel's choice; else that one, if it is free.
  explicit HeldPort(int port = 0) : fd_(::socket(AF_INET, SOCK_STREAM, 0)), port_(bind_loopback(fd_, port)) {
    listening_ = port_ > 0 && ::listen(fd_, 1) == 0;
  }
  ~HeldPort() { ::close(fd_); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;

  bool listening() const { return listening_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_;
  bool listening_ = false;
};

// A fresh path (removed if it exists) under the temporary directory, for a run directory that
// `trib` creates itself: trib_<prefix>_<name>_<pid>.
inline fs::path fresh_path(const std::string& prefix, const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("trib_" + prefix + "_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

}  // namespace trib::testing
