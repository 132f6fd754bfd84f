#include "trib/cluster/local_cluster.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <optional>
#include <thread>
#include <vector>

#include "cluster/child_process.h"
#include "cluster/progress_board.h"
#include "cluster/scale_request.h"
#include "trib/cluster/coordinator.h"
#include "trib/core/log.h"
#include "trib/cluster/make_registry.h"
#include "trib/cluster/membership_keys.h"
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
  explicit Supervisor(ProgressBoard& board) : board_(board) {}

  void add(std::unique_ptr<ChildProcess> c) { children_.push_back(std::move(c)); }

  // Starts `old`'s program again under its name, in its place; returns the new process.
  ChildProcess& relaunch(const ChildProcess* old, const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env) {
    for (auto& c : children_)
      if (c.get() == old) {
        excused_.erase(old);
        c = std::make_unique<ChildProcess>(old->name(), argv, env);
        return *c;
      }
    throw InvalidArgument(fmt::format("no child process {} to relaunch", old->name()));
  }

  // One pass: forward output, collect exits. Returns the first failed child, if any; from
  // then on only that child is heard. A child for which `excused` says yes (a worker the job
  // goes on without) is not a failure: it is added to `lost`.
  ChildProcess* pump(const std::function<bool(const ChildProcess&)>& excused, std::vector<ChildProcess*>& lost) {
    ChildProcess* failed = nullptr;
    for (auto& c : children_) {
      for (const std::string& line : c->read_lines()) board_.child_line(c->name(), line);
      if (c->poll_exit() && !c->succeeded() && failed == nullptr && failed_ == nullptr && !excused_.contains(c.get())) {
        if (excused && excused(*c)) {
          excused_.insert(c.get());
          lost.push_back(c.get());
          continue;
        }
        failed = failed_ = c.get();
        board_.stopping(c->name());
      }
    }
    board_.tick();
    return failed;
  }

  // "worker1 (pid 12): the batch ... (exited with status 1)"
  std::string describe_failure(const ChildProcess& c) const {
    std::string error = board_.error_of(c.name());
    if (error.empty()) return fmt::format("{} (pid {}) {}", c.name(), c.pid(), c.describe_exit());
    return fmt::format("{} (pid {}): {} ({})", c.name(), c.pid(), error, c.describe_exit());
  }

  // Besides `failed`, the children that had already exited with an error when it was seen:
  // one of them may be the cause (a stage that failed first, its neighbour reporting the
  // closed link), and the order in which exits are noticed does not say which.
  std::vector<const ChildProcess*> also_failed(const ChildProcess* failed) {
    std::vector<const ChildProcess*> out;
    for (const auto& c : children_)
      if (c.get() != failed && c->poll_exit() && !c->succeeded() && !excused_.contains(c.get())) out.push_back(c.get());
    return out;
  }

  // "ps0 (pid 12), worker0 (pid 13)"
  std::string describe() const {
    std::string out;
    for (const auto& c : children_) out += fmt::format("{}{} (pid {})", out.empty() ? "" : ", ", c->name(), c->pid());
    return out;
  }

  // Children whose name starts with `prefix` and that are still running.
  std::vector<ChildProcess*> running(const std::string& prefix) const {
    std::vector<ChildProcess*> out;
    for (const auto& c : children_)
      if (c->name().starts_with(prefix) && !c->exited()) out.push_back(c.get());
    return out;
  }

  bool all_exited(const std::string& prefix) const {
    for (const auto& c : children_)
      if (c->name().starts_with(prefix) && !c->exited()) return false;
    return true;
  }

  ChildProcess* pump() {
    std::vector<ChildProcess*> ignored;
    return pump({}, ignored);
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
  ProgressBoard& board_;
  std::vector<std::unique_ptr<ChildProcess>> children_;
  ChildProcess* failed_ = nullptr;
  std::set<const ChildProcess*> excused_;
};

}  // namespace

int run_local_cluster(const LocalClusterOptions& o) {
  ProgressBoard board(o.out, o.live);
  // The coordinator's transport logs above the live line; quiet once the job is being torn
  // down, when every connection it closes is expected.
  std::atomic<bool> quiet{false};
  Log net_log("trib.net", o.log_level, [&board](std::string_view line) { board.print_transport(std::string(line)); });
  net::LogSink sink = [&quiet, net_log](std::string_view line) {
    if (!quiet.load()) net_log.info("{}", escape_for_log(line));
  };
  net::ClusterSecret secret = net::ClusterSecret::generate();
  auto ctx = net::NetContext::create(secret, net::PeerIdentity{"coordinator", 0, ""}, o.net, sink);
  auto transport = std::make_shared<net::TcpTransport>(ctx);
  Coordinator coordinator(transport, {.job_yaml = o.job_yaml,
                                      .run_dir = o.run_dir,
                                      .resume = o.resume,
                                      .ps = o.ps,
                                      .workers = o.workers,
                                      .max_workers = o.max_workers,
                                      .workers_may_be_lost = o.workers_may_be_lost,
                                      .servers_may_be_lost = o.relaunch_servers,
                                      .chief_may_be_lost = o.relaunch_chief,
                                      .registry = make_registry(o.store, o.job_name)});
  board.print(fmt::format("local cluster: coordinator at {}, {} parameter server(s), {} worker(s)",
                          coordinator.address(), o.ps, o.workers));
  std::shared_ptr<void> monitoring = o.monitor ? o.monitor(coordinator, ctx) : nullptr;  // before the coordinator goes

  SignalGuard signals(o.terminate == nullptr);
  Supervisor sup(board);
  std::map<std::string, std::string> env{{kSecretEnv, secret.to_hex()}};
  auto argv = [&](const char* role, int i) {
    // `trib worker ... --index 1 --log-level info`: the role first, as an operator types it (and greps for it).
    std::vector<std::string> a{o.executable, role,        "--join", coordinator.address(), "--index", std::to_string(i),
                               "--log-level", std::string(to_string(o.log_level))};
    if (o.live && std::string_view(role) == "worker") a.push_back("--progress-lines");
    return a;
  };
  for (int i = 0; i < o.ps; ++i) sup.add(std::make_unique<ChildProcess>(fmt::format("ps{}", i), argv("ps", i), env));
  for (int i = 0; i < o.workers; ++i)
    sup.add(std::make_unique<ChildProcess>(fmt::format("worker{}", i), argv("worker", i), env));
  int restarts = 0;  // of workers; the only role relaunched today
  int chief_restarts = 0;  // of them, worker 0's
  // A worker lost to a signal (kill -9, the OOM killer) is relaunched; one that exited with an
  // error would fail again. The chief only with relaunch_chief: it owns the run directory.
  auto relaunchable = [&](const ChildProcess& c) {
    return o.relaunch_workers && c.name().starts_with("worker") && (c.name() != "worker0" || o.relaunch_chief) &&
           c.term_signal() != 0 && restarts < o.max_restarts;
  };

  board.print(fmt::format("local cluster: started {}", sup.describe()));
  int server_restarts = 0;
  // A server killed by a signal, likewise: the chief restores the job once it is back.
  auto relaunchable_server = [&](const ChildProcess& c) {
    // With backups, also one that stopped because it was replaced while cut off (SIGSTOP, a
    // partition): fenced (75), or told it is no longer a member (3). It comes back as a backup.
    const bool replaced = o.server_backups && (c.exit_status() == 75 || c.exit_status() == 3);
    return o.relaunch_servers && c.name().starts_with("ps") && (c.term_signal() != 0 || replaced) &&
           server_restarts < o.max_restarts;
  };
  // A worker process that ended is a lost member: the coordinator evicts it (if its
  // connection did not tell it first) and says whether the job goes on without it.
  auto evicted = [&](const ChildProcess& c) {
    if (relaunchable_server(c)) return coordinator.member_lost("ps", std::stoi(c.name().substr(2)), c.describe_exit());
    if (!c.name().starts_with("worker")) return false;
    // A chief that is not relaunched (it failed with an error, or its restarts are spent)
    // ends the job: nobody else writes its checkpoints and report.
    if (c.name() == "worker0" && o.relaunch_chief && !relaunchable(c)) return false;
    return coordinator.member_lost("worker", std::stoi(c.name().substr(6)), c.describe_exit());
  };
  std::optional<Clock::time_point> stop_by;  // after SIGTERM: when the grace period ends
  // `trib scale RUN_DIR --workers N` (cluster/scale_request.h): joiners take the lowest free
  // indices; the highest are sent SIGTERM, which a parameter-server worker takes as its leave.
  std::set<const ChildProcess*> leaving;
  auto scale_to = [&](int n) {
    const int limit = std::max(o.workers, o.max_workers);
    if (n < 1 || n > limit) {
      board.print(fmt::format("local cluster: cannot scale to {} worker(s): expected 1..{} (cluster.max_workers)", n,
                              limit));
      return;
    }
    std::vector<ChildProcess*> staying;
    std::set<int> held;
    for (ChildProcess* c : sup.running("worker")) {
      held.insert(std::stoi(c->name().substr(6)));
      if (!leaving.contains(c)) staying.push_back(c);
    }
    board.print(fmt::format("local cluster: scaling from {} to {} worker(s)", staying.size(), n));
    for (int i = 0; static_cast<int>(staying.size()) < n && i < limit; ++i) {
      if (held.contains(i)) continue;
      auto c = std::make_unique<ChildProcess>(fmt::format("worker{}", i), argv("worker", i), env);
      board.print(fmt::format("local cluster: worker{} joins (pid {})", i, c->pid()));
      coordinator.store().set(membership_key::given_up(i), "");
      staying.push_back(c.get());
      sup.add(std::move(c));
    }
    std::sort(staying.begin(), staying.end(), [](const ChildProcess* a, const ChildProcess* b) {
      return std::stoi(a->name().substr(6)) > std::stoi(b->name().substr(6));
    });
    int excess = static_cast<int>(staying.size()) - n;
    for (ChildProcess* c : staying) {
      if (excess <= 0) break;
      if (c->name() == "worker0") continue;  // the chief ends the run: never scaled away
      --excess;
      leaving.insert(c);
      const int index = std::stoi(c->name().substr(6));
      if (o.leave_by_request) {
        // The holder's incarnation: a later process at this index is not asked.
        std::int64_t incarnation = -1;
        for (const RosterEntry& e : coordinator.roster().members)
          if (e.role == "worker" && e.index == index) incarnation = e.incarnation;
        coordinator.store().set(membership_key::leave_request(index), std::to_string(incarnation));
        board.print(fmt::format("local cluster: asked {} (pid {}) to leave: it leaves at its next epoch boundary",
                                c->name(), c->pid()));
        continue;
      }
      c->signal(SIGTERM);
      board.print(fmt::format("local cluster: SIGTERM to {} (pid {}): it leaves at its next step", c->name(), c->pid()));
    }
  };
  auto next_scale_check = Clock::now();
  // A worker killed and evicted, the job going on without it ("" none): a failure after it
  // (an allreduce stream job's chief that cannot write the last checkpoint without the lost
  // worker's final offsets) is that loss's consequence, so it counts as a loss (lost_process).
  std::string lost_unrecovered;
  for (;;) {
    if (!o.run_dir.empty() && o.workers_may_be_lost && Clock::now() >= next_scale_check) {
      next_scale_check = Clock::now() + std::chrono::milliseconds(200);
      try {
        if (std::optional<int> n = take_scale_request(o.run_dir)) scale_to(*n);
      } catch (const Error& e) {
        board.print(fmt::format("local cluster: {}", e.what()));
      }
    }
    std::vector<ChildProcess*> lost;
    ChildProcess* failed = sup.pump(evicted, lost);
    for (ChildProcess* c : lost) {
      if (c->name().starts_with("ps")) {
        ++server_restarts;
        board.print(fmt::format("local cluster: {} (pid {}) {}; relaunching ({} of {}); {}", c->name(), c->pid(),
                                c->describe_exit(), server_restarts, o.max_restarts,
                                o.server_backups ? "its shard's backup takes over, nothing rolls back (if no backup holds "
                                                   "the shard's copy yet, the newest checkpoint is restored instead)"
                                                 : "the job rolls back to its newest checkpoint"));
        ChildProcess& again = sup.relaunch(c, argv("ps", std::stoi(c->name().substr(2))), env);
        board.print(fmt::format("local cluster: {} relaunched (pid {})", again.name(), again.pid()));
        continue;
      }
      if (!relaunchable(*c)) {
        // How it ended first (as every other launcher line), then its own last error.
        const std::string error = board.error_of(c->name());
        board.print(fmt::format("local cluster: {} (pid {}) {}{}; it was evicted, and the job goes on without it",
                                c->name(), c->pid(), c->describe_exit(), error.empty() ? "" : " (" + error + ")"));
        // Gone for good: a parameter-server stream job hands its partitions to the others.
        coordinator.store().set(membership_key::given_up(std::stoi(c->name().substr(6))), "1");
        if (c->term_signal() != 0) lost_unrecovered = c->name();
        continue;
      }
      ++restarts;
      if (o.relaunched_counts_as_lost) lost_unrecovered = c->name();
      const int index = std::stoi(c->name().substr(std::string("worker").size()));
      board.print(fmt::format("local cluster: {} (pid {}) {}; relaunching ({} of {}){}", c->name(), c->pid(),
                              c->describe_exit(), restarts, o.max_restarts,
                              index == 0 && !o.chief_note.empty() ? "; " + o.chief_note : ""));
      // The coordinator set it when it evicted the chief; again here for a chief that had left
      // before it was lost. The same count: how many times the chief was relaunched.
      if (index == 0) coordinator.store().set(membership_key::kChiefRelaunched, std::to_string(++chief_restarts));
      ChildProcess& again = sup.relaunch(c, argv("worker", index), env);
      board.print(fmt::format("local cluster: {} relaunched (pid {})", again.name(), again.pid()));
    }
    if (failed) {
      quiet = true;
      board.print(fmt::format("trib: error: {}; stopping the cluster", sup.describe_failure(*failed)));
      for (const ChildProcess* other : sup.also_failed(failed))
        board.print(fmt::format("trib: error: also {}", sup.describe_failure(*other)));
      if (failed->term_signal() != 0 || !lost_unrecovered.empty()) {
        if (!o.loss_note.empty()) board.print("trib: " + o.loss_note);
        if (o.lost_process != nullptr)
          *o.lost_process = failed->term_signal() != 0 ? failed->name() : lost_unrecovered;
      }
      coordinator.fail(failed->name() + " " + failed->describe_exit());
      sup.stop_all(std::chrono::seconds(5));
      return 1;
    }
    if (o.terminate != nullptr && o.terminate->received() && !stop_by) {
      board.print(fmt::format("trib: SIGTERM: the job writes a checkpoint at its next step boundary and stops (grace {} s)",
                              std::chrono::duration_cast<std::chrono::seconds>(o.preemption_grace).count()));
      coordinator.store().set(kStopKey, "the launcher: SIGTERM");
      stop_by = Clock::now() + o.preemption_grace;
    }
    if (stop_by && Clock::now() > *stop_by) {
      quiet = true;
      board.print("trib: error: the job did not stop within cluster.preemption_grace_s; stopping the cluster");
      sup.stop_all(std::chrono::seconds(2));
      return 1;
    }
    if (int sig = g_interrupt.load()) {
      quiet = true;
      board.stopping("");
      board.print(fmt::format("trib: interrupted (signal {}); stopping the cluster", sig));
      sup.stop_all(std::chrono::seconds(5));
      return 130;
    }
    if (sup.all_exited("worker")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  board.finish();
  // Every worker finished: the parameter servers may go.
  quiet = true;
  coordinator.shutdown_members();
  auto until = Clock::now() + std::chrono::seconds(10);
  while (!sup.all_exited("ps") && Clock::now() < until) {
    if (ChildProcess* failed = sup.pump()) {
      board.print(fmt::format("trib: error: {}", sup.describe_failure(*failed)));
      sup.stop_all(std::chrono::seconds(2));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sup.stop_all(std::chrono::seconds(2));
  board.print("local cluster: every process finished");
  return 0;
}

}  // namespace trib::cluster
