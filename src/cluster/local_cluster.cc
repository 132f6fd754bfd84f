#include "trib/cluster/local_cluster.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "trib/cluster/child_process.h"
#include "trib/cluster/coordinator.h"
#include "trib/cluster/job_stop.h"
#include "trib/net/cluster_secret.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"

namespace trib::cluster {

namespace {

using Clock = std::chrono::steady_clock;

// Set from the signal handler; the supervision loop polls it.
std::atomic<int> g_interrupt{0};  // NOLINT: a signal handler can only reach process state
void on_signal(int sig) { g_interrupt.store(sig); }

// SIGINT stops the cluster at once. So does SIGTERM, unless the caller handles it
// (LocalClusterOptions::terminate: preemption, a checkpoint first).
class SignalGuard {
 public:
  explicit SignalGuard(bool sigterm_too) : sigterm_(sigterm_too) {
    g_interrupt = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    if (sigterm_) sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    if (sigterm_) sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  bool sigterm_;
  struct sigaction old_int_ {}, old_term_ {};
};

class Supervisor {
 public:
  explicit Supervisor(std::FILE* out) : out_(out) {}

  void add(std::unique_ptr<ChildProcess> c) { children_.push_back(std::move(c)); }

  // One pass: forward output, collect exits. Returns the first failed child, if any.
  ChildProcess* pump() {
    ChildProcess* failed = nullptr;
    for (auto& c : children_) {
      for (const std::string& line : c->read_lines()) fmt::print(out_, "[{}] {}\n", c->name(), line);
      if (c->poll_exit() && !c->succeeded() && failed == nullptr) failed = c.get();
    }
    std::fflush(out_);
    return failed;
  }

  // "ps0 (pid 12), worker0 (pid 13)"
  std::string describe() const {
    std::string out;
    for (const auto& c : children_) out += fmt::format("{}{} (pid {})", out.empty() ? "" : ", ", c->name(), c->pid());
    return out;
  }

  bool all_exited(const std::string& prefix) const {
    for (const auto& c : children_)
      if (c->name().starts_with(prefix) && !c->exited()) return false;
    return true;
  }

  // SIGINT (stop now: SIGTERM would ask for a checkpoint first), then SIGKILL for whoever is
  // still there after `grace`.
  void stop_all(std::chrono::milliseconds grace) {
    for (auto& c : children_) c->signal(SIGINT);
    auto until = Clock::now() + grace;
    while (Clock::now() < until && !all_exited("")) {
      pump();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (auto& c : children_) c->signal(SIGKILL);
    while (!all_exited("")) {
      pump();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pump();
  }

 private:
  std::FILE* out_;
  std::vector<std::unique_ptr<ChildProcess>> children_;
};

}  // namespace

int run_local_cluster(const LocalClusterOptions& o) {
  net::ClusterSecret secret = net::ClusterSecret::generate();
  auto ctx = net::NetContext::create(secret, net::PeerIdentity{"coordinator", 0, ""}, o.net);
  auto transport = std::make_shared<net::TcpTransport>(ctx);
  Coordinator coordinator(transport, {"127.0.0.1:0", o.job_yaml, o.run_dir, o.resume, o.ps, o.workers});
  fmt::print(o.out, "local cluster: coordinator at {}, {} parameter server(s), {} worker(s)\n",
             coordinator.address(), o.ps, o.workers);

  SignalGuard signals(o.terminate == nullptr);
  Supervisor sup(o.out);
  std::map<std::string, std::string> env{{kSecretEnv, secret.to_hex()}};
  for (int i = 0; i < o.ps; ++i)
    sup.add(std::make_unique<ChildProcess>(fmt::format("ps{}", i),
                                           std::vector<std::string>{o.executable, "ps", "--join", coordinator.address(),
                                                                    "--index", std::to_string(i)},
                                           env));
  for (int i = 0; i < o.workers; ++i)
    sup.add(std::make_unique<ChildProcess>(
        fmt::format("worker{}", i),
        std::vector<std::string>{o.executable, "worker", "--join", coordinator.address(), "--index", std::to_string(i)},
        env));

  fmt::print(o.out, "local cluster: started {}\n", sup.describe());
  std::optional<Clock::time_point> stop_by;  // after SIGTERM: when the grace period ends
  for (;;) {
    if (ChildProcess* failed = sup.pump()) {
      fmt::print(o.out, "trib: error: {} (pid {}) {}; stopping the cluster\n", failed->name(), failed->pid(),
                 failed->describe_exit());
      coordinator.fail(failed->name() + " " + failed->describe_exit());
      sup.stop_all(std::chrono::seconds(5));
      return 1;
    }
    if (o.terminate != nullptr && o.terminate->received() && !stop_by) {
      fmt::print(o.out, "trib: SIGTERM: the job writes a checkpoint at its next step boundary and stops (grace {} s)\n",
                 std::chrono::duration_cast<std::chrono::seconds>(o.preemption_grace).count());
      coordinator.store().set(kStopKey, "the launcher: SIGTERM");
      stop_by = Clock::now() + o.preemption_grace;
    }
    if (stop_by && Clock::now() > *stop_by) {
      fmt::print(o.out, "trib: error: the job did not stop within cluster.preemption_grace_s; stopping the cluster\n");
      sup.stop_all(std::chrono::seconds(2));
      return 1;
    }
    if (int sig = g_interrupt.load()) {
      fmt::print(o.out, "trib: interrupted (signal {}); stopping the cluster\n", sig);
      sup.stop_all(std::chrono::seconds(5));
      return 130;
    }
    if (sup.all_exited("worker")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Every worker finished: the parameter servers may go.
  coordinator.shutdown_members();
  auto until = Clock::now() + std::chrono::seconds(10);
  while (!sup.all_exited("ps") && Clock::now() < until) {
    if (ChildProcess* failed = sup.pump()) {
      fmt::print(o.out, "trib: error: {} (pid {}) {}\n", failed->name(), failed->pid(), failed->describe_exit());
      sup.stop_all(std::chrono::seconds(2));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sup.stop_all(std::chrono::seconds(2));
  fmt::print(o.out, "local cluster: every process finished\n");
  return 0;
}

}  // namespace trib::cluster
