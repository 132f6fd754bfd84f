// bench=chaos strategy=ps (issue 12): one run of examples/fashion_ps.yaml as a multi-host job
// (a `trib coordinator`, 2 `trib ps --join` and 3 async `trib worker --join` processes on
// loopback) under a supervisor played by this program (chaos_supervisor.h: a process ended by a
// signal is started again with the same command), beside a fault-free run of the same job. A
// seeded schedule kills, one after the other, with SIGKILL:
//   - a worker (1 or 2) once the chief's checkpoint of step A exists. worker_recovery_s: from the
//     kill to the relaunched worker's "starts at step" line (it applies steps again; the others
//     never stopped);
//   - a parameter server (0 or 1) once the worker is back and a checkpoint of step >= B > A
//     exists. ps_recovery_s: from the kill to the chief's rewind line (every worker is blocked
//     until then; the chief applies its next step right after);
//   - the coordinator, once the chief is 25 or 50 steps past the restore. It is started again on
//     its run directory and takes the job back from its journal. coordinator_recovery_s: from
//     the kill to the last member's "reconnected to the coordinator" line (the membership whole
//     again; the data plane never stopped meanwhile).
// faults=K survived=K: faults injected, and those the job recovered from (it finished, exit 0).
// accuracy, fault_free_accuracy: on the whole test set (10,000 examples; on 2,000 the two runs'
// difference had a spread near the 0.01 target by itself).
// steps_redone: the chief's report's total. Steps lost to the coordinator's loss (stderr, not in
// the line): the steps redone by rewinds that happened while it was away or being rejoined (0
// is the target), with the chief's steps applied in that time to show the data plane went on.
// With --ps-replicas 1 every shard has a hot backup (strategy.ps_replicas): the server's loss is
// taken over by its backup, nothing rolls back (steps_redone = 0 is the target), and
// ps_recovery_s runs from the kill to the backup's "taking over the shard" line (the step that
// found the server gone goes on there at once).
// Usage: chaos_bench [--seed N] [--epochs N] [--ps-replicas 0|1]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "chaos_supervisor.h"

namespace {

namespace fs = std::filesystem;
using trib::bench::Clock;
using trib::bench::Supervisor;

std::string trib_binary() { return (fs::read_symlink("/proc/self/exe").parent_path() / "trib").string(); }

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The step of the newest checkpoint under `run_dir`, or -1.
int newest_checkpoint(const fs::path& run_dir) {
  int newest = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir / "checkpoints", ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("ckpt-") && fs::exists(e.path() / "manifest.json"))
      newest = std::max(newest, std::stoi(name.substr(5)));
  }
  return newest;
}

struct Schedule {
  std::string worker;  // "worker1"
  std::string ps;      // "ps0"
  int worker_at = 0;   // the chief's checkpoint step that triggers the worker's kill
  int ps_at = 0;
  int coordinator_after = 0;  // chief steps past the restore's step
};

struct Fault {
  std::optional<Clock::time_point> at;
  std::optional<double> recovery_s;
};

// What the lines of one run say; written by the supervisor's reader, read by the schedule.
struct Observed {
  std::mutex mu;
  std::int64_t chief_step = -1;
  std::optional<int> restore_step;  // the checkpoint step the chief's restore went back to
  // With backups: the chief's step when the backup took the lost server's shard over.
  std::optional<std::int64_t> takeover_step;
  std::optional<double> accuracy;
  std::optional<long> steps_redone;  // the chief's report's total, where it had restores
  Fault worker, ps, coordinator;
  std::set<std::string> reconnected;  // members back with the restarted coordinator
  std::int64_t chief_step_at_coordinator_kill = -1, chief_step_at_coordinator_back = -1;
  // The chief's first progress line after the coordinator's kill (lines come every 0.5 s).
  std::optional<std::pair<std::int64_t, double>> chief_progress_after_kill;
  long redone_while_coordinator_away = 0;  // "N steps to redo" of rewinds in that window
};

double since(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

struct Run {
  int exit_code = -1;  // the coordinator's (0: every worker finished)
  Observed* seen = nullptr;
};

const std::vector<std::string> kMembers{"ps0", "ps1", "worker0", "worker1", "worker2"};

void on_line(Observed& o, const Schedule* s, const std::string& name, const std::string& line, Clock::time_point now) {
  static const std::regex step_re("step=([0-9]+) total=");
  static const std::regex restore_re("worker 0: parameter server restore: .* \\(step ([0-9]+)\\) in generation");
  static const std::regex redo_re("parameter server restore \\(.*\\(([0-9]+) steps to redo\\)");
  static const std::regex acc_re("done: test accuracy ([0-9.]+)");
  static const std::regex redone_re("steps redone in all: ([0-9]+)");
  std::smatch m;
  std::lock_guard lock(o.mu);
  if (std::regex_search(line, m, step_re)) {
    if (name == "worker0") {
      o.chief_step = std::stoll(m[1]);
      if (o.coordinator.at && !o.chief_progress_after_kill)
        o.chief_progress_after_kill = std::pair{o.chief_step, since(*o.coordinator.at, now)};
    }
    return;  // progress lines are not echoed
  }
  std::fprintf(stderr, "[%s] %s\n", name.c_str(), line.c_str());
  if (name == "worker0" && std::regex_search(line, m, acc_re)) o.accuracy = std::stod(m[1]);
  if (name == "worker0" && std::regex_search(line, m, redone_re)) o.steps_redone = std::stol(m[1]);
  if (s == nullptr) return;
  if (o.worker.at && !o.worker.recovery_s && name == s->worker &&
      line.find("worker " + s->worker.substr(6) + ": starts at step") != std::string::npos)
    o.worker.recovery_s = since(*o.worker.at, now);
  if (o.ps.at && !o.ps.recovery_s && name == "worker0" && std::regex_search(line, m, restore_re)) {
    o.restore_step = std::stoi(m[1]);
  }
  if (o.ps.at && !o.ps.recovery_s && name == "worker0" &&
      line.find("worker 0: parameter server restore (") != std::string::npos)
    o.ps.recovery_s = since(*o.ps.at, now);
  if (o.ps.at && !o.ps.recovery_s && name.starts_with("ps") &&
      line.find("taking over the shard with no rollback") != std::string::npos) {
    o.ps.recovery_s = since(*o.ps.at, now);
    o.takeover_step = o.chief_step;
  }
  if (o.coordinator.at && !o.coordinator.recovery_s) {
    if (std::regex_search(line, m, redo_re)) o.redone_while_coordinator_away += std::stol(m[1]);
    if (line.find("reconnected to the coordinator at") != std::string::npos) o.reconnected.insert(name);
    if (o.reconnected.size() == kMembers.size()) {
      o.coordinator.recovery_s = since(*o.coordinator.at, now);
      o.chief_step_at_coordinator_back = o.chief_step;
    }
  }
}

// Runs the job under the supervisor; kills as `s` says (none when null).
int run(const std::string& job, const std::vector<std::string>& settings, const fs::path& run_dir, const Schedule* s,
        Observed& o) {
  const std::string address = fmt::format("127.0.0.1:{}", free_port());
  Supervisor sup(trib_binary(), [&](const std::string& name, const std::string& line, Clock::time_point now) {
    on_line(o, s, name, line, now);
  });
  std::vector<std::string> coordinator{"coordinator", job, "--listen", address, "--output", run_dir.string()};
  for (const std::string& kv : settings) coordinator.insert(coordinator.end(), {"--set", kv});
  sup.start("coordinator", coordinator, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const std::string& m : kMembers) {
    const bool ps = m.starts_with("ps");
    std::vector<std::string> args{ps ? "ps" : "worker", "--join", address, "--index", m.substr(ps ? 2 : 6)};
    if (!ps) args.push_back("--progress-lines");
    sup.start(m, args, true);
  }
  const auto limit = Clock::now() + std::chrono::minutes(15);
  while (s != nullptr && Clock::now() < limit && sup.exit_code("coordinator") < 0) {
    {
      std::lock_guard lock(o.mu);
      const int newest = newest_checkpoint(run_dir);
      auto kill = [&](Fault& f, const std::string& name, const std::string& why) {
        f.at = sup.signal(name, SIGKILL);
        if (f.at) std::fprintf(stderr, "chaos_bench: killed %s at %s\n", name.c_str(), why.c_str());
      };
      if (!o.worker.at && newest >= s->worker_at)
        kill(o.worker, s->worker, fmt::format("the chief's checkpoint {}", newest));
      else if (o.worker.recovery_s && !o.ps.at && newest >= s->ps_at)
        kill(o.ps, s->ps, fmt::format("the chief's checkpoint {}", newest));
      else if (o.ps.recovery_s && (o.restore_step || o.takeover_step) && !o.coordinator.at &&
               o.chief_step >= (o.restore_step ? *o.restore_step : *o.takeover_step) + s->coordinator_after) {
        kill(o.coordinator, "coordinator", fmt::format("the chief's step {}", o.chief_step));
        o.chief_step_at_coordinator_kill = o.chief_step;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sup.wait_all(std::chrono::seconds(std::max<long>(
      1, std::chrono::duration_cast<std::chrono::seconds>(limit - Clock::now()).count())));
  return sup.exit_code("coordinator");
}

std::string seconds(const std::optional<double>& s) { return s ? fmt::format("{:.2f}", *s) : "na"; }
std::string accuracy(const std::optional<double>& a) { return a ? fmt::format("{:.4f}", *a) : "na"; }

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  int epochs = 8;
  int replicas = 0;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "chaos_bench: %s needs a value\n", argv[i]);
      return 2;
    }
    if (flag == "--seed") seed = static_cast<unsigned>(std::stoul(argv[i + 1]));
    else if (flag == "--epochs") epochs = std::stoi(argv[i + 1]);
    else if (flag == "--ps-replicas") replicas = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "chaos_bench: unknown option %s (expected --seed N, --epochs N or --ps-replicas 0|1)\n",
                   argv[i]);
      return 2;
    }
  }
  if (replicas != 0 && replicas != 1) {
    std::fprintf(stderr, "chaos_bench: --ps-replicas %d: expected 0 or 1\n", replicas);
    return 2;
  }
  // Every role reads the cluster secret from the environment, as a supervisor would pass it.
  ::setenv("TRIB_CLUSTER_SECRET", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 1);
  const fs::path tmp = fs::temp_directory_path();
  const std::string job = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";
  auto dir = [&](const std::string& name) { return tmp / fmt::format("trib_chaos_{}_{}", name, ::getpid()); };
  const std::vector<std::string> settings{
      "threads.intra=1",       "training.train_metrics=false", "data.train_subset=24000", "data.test_subset=10000",
      fmt::format("training.epochs={}", epochs), "cluster.ps=2", "cluster.workers=3", "training.checkpoint_every=25",
      "training.eval_every=1000000", fmt::format("strategy.ps_replicas={}", replicas)};
  // The schedule: a worker at the chief's checkpoint 25 or 50, a server 50 or 75 steps later,
  // the coordinator 25 or 50 steps past the restore.
  std::mt19937 rng(seed);
  Schedule s;
  s.worker = fmt::format("worker{}", 1 + rng() % 2);
  s.ps = fmt::format("ps{}", rng() % 2);
  s.worker_at = 25 * (1 + static_cast<int>(rng() % 2));
  s.ps_at = s.worker_at + 25 * (2 + static_cast<int>(rng() % 2));
  s.coordinator_after = 25 * (1 + static_cast<int>(rng() % 2));
  std::fprintf(stderr, "chaos_bench: seed %u: kill %s at checkpoint %d, %s at checkpoint %d, the coordinator %d steps "
               "past the restore\n", seed, s.worker.c_str(), s.worker_at, s.ps.c_str(), s.ps_at, s.coordinator_after);

  Observed clean_seen, chaos_seen;
  const int clean = run(job, settings, dir("clean"), nullptr, clean_seen);
  const int chaos = run(job, settings, dir("chaos"), &s, chaos_seen);
  fs::remove_all(dir("clean"));
  fs::remove_all(dir("chaos"));

  Observed& o = chaos_seen;
  int faults = 0, survived = 0;
  for (const Fault* f : {&o.worker, &o.ps, &o.coordinator}) {
    if (!f->at) continue;
    ++faults;
    if (chaos == 0 && f->recovery_s) ++survived;
  }
  if (o.coordinator.at)
    std::fprintf(stderr,
                 "chaos_bench: coordinator killed at the chief's step %lld, every member back at its step %lld; the "
                 "chief's first progress line after the kill: step %lld, %.2f s after it; steps lost to its loss "
                 "(redone by rewinds while it was away): %ld\n",
                 static_cast<long long>(o.chief_step_at_coordinator_kill),
                 static_cast<long long>(o.chief_step_at_coordinator_back),
                 static_cast<long long>(o.chief_progress_after_kill ? o.chief_progress_after_kill->first : -1),
                 o.chief_progress_after_kill ? o.chief_progress_after_kill->second : -1.0,
                 o.redone_while_coordinator_away);
  fmt::print(
      "bench=chaos strategy=ps mode=async workers=3 ps=2 ps_replicas={} faults={} survived={} accuracy={} "
      "fault_free_accuracy={} worker_recovery_s={} ps_recovery_s={} coordinator_recovery_s={} steps_redone={}\n",
      replicas, faults, survived, accuracy(o.accuracy), accuracy(clean_seen.accuracy), seconds(o.worker.recovery_s),
      seconds(o.ps.recovery_s), seconds(o.coordinator.recovery_s),
      // A report without restores has no "steps redone" line: nothing was redone.
      o.steps_redone ? std::to_string(*o.steps_redone) : o.accuracy ? std::string("0") : std::string("na"));
  return clean == 0 && chaos == 0 ? 0 : 1;
}
