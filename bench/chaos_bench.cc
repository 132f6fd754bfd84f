// bench=chaos strategy=ps: faults injected for real into one run of examples/fashion_ps.yaml
// (2 parameter servers, 3 async workers, a local cluster), on a seeded schedule, beside a
// fault-free run of the same job:
//   - worker 1 is killed (SIGKILL) once the chief's checkpoint of step A exists; the launcher
//     relaunches it and it rejoins. worker_recovery_s: from the kill to its "starts at step"
//     line (it is training again; the others never stopped).
//   - server 1 is killed once the checkpoint of step B > A exists; the launcher relaunches it
//     and the chief restores the job from its newest checkpoint. ps_recovery_s: from the kill
//     to the chief's rewind line, after which it applies steps again.
//   faults=K survived=K: faults injected, and those the job recovered from (it finished, exit 0).
//   steps_redone: the total the chief's report gives. The coordinator is not killed here
//   (coordinator_recovery_s=na).
// Usage: chaos_bench [--seed N] [--epochs N]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string trib_binary() { return (fs::read_symlink("/proc/self/exe").parent_path() / "trib").string(); }

struct Kill {
  std::string process;        // "worker1", "ps1"
  int after_checkpoint = 0;   // the chief's checkpoint step that triggers it
  std::optional<Clock::time_point> at;
  std::optional<double> recovery_s;
};

struct Run {
  int exit_code = -1;
  std::optional<double> accuracy;
  long steps_redone = 0;
  std::vector<Kill> kills;
};

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

// Runs the job; kills as scheduled (a thread watches the checkpoints appear), timing each
// recovery from the lines that follow.
Run run(const std::string& args, const fs::path& run_dir, std::vector<Kill> kills) {
  Run out;
  FILE* p = popen(("exec " + trib_binary() + " train " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  std::mutex mu;
  std::map<std::string, int> pids;
  std::atomic<bool> done{false};
  std::thread killer([&] {
    while (!done.load()) {
      const int newest = newest_checkpoint(run_dir);
      {
        std::lock_guard lock(mu);
        for (Kill& k : kills)
          if (!k.at && newest >= k.after_checkpoint && pids.contains(k.process)) {
            ::kill(pids[k.process], SIGKILL);
            k.at = Clock::now();
            std::fprintf(stderr, "chaos_bench: killed %s (pid %d) at the chief's checkpoint %d\n", k.process.c_str(),
                         pids[k.process], newest);
          }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const std::regex pid_re("(ps[0-9]+|worker[0-9]+) (?:relaunched )?\\(pid ([0-9]+)\\)");
  const std::regex acc_re("done: test accuracy ([0-9.]+)");
  const std::regex redone_re("steps redone in all: ([0-9]+)");
  char buf[8192];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    const std::string line(buf);
    std::fputs(buf, stderr);
    std::lock_guard lock(mu);
    for (auto it = std::sregex_iterator(line.begin(), line.end(), pid_re); it != std::sregex_iterator(); ++it)
      pids[(*it)[1]] = std::stoi((*it)[2]);
    std::smatch m;
    for (Kill& k : kills) {
      if (!k.at || k.recovery_s) continue;
      const bool back = k.process.starts_with("worker")
                            ? line.find("[" + k.process + "] worker " + k.process.substr(6) + ": starts at step") !=
                                  std::string::npos
                            : line.find("[worker0] worker 0: parameter server restore (") != std::string::npos;
      if (back) k.recovery_s = std::chrono::duration<double>(Clock::now() - *k.at).count();
    }
    if (std::regex_search(line, m, acc_re)) out.accuracy = std::stod(m[1]);
    if (std::regex_search(line, m, redone_re)) out.steps_redone = std::stol(m[1]);
  }
  done = true;
  killer.join();
  const int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  out.kills = std::move(kills);
  return out;
}

std::string seconds(const std::optional<double>& s) { return s ? fmt::format("{:.2f}", *s) : "na"; }

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  int epochs = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed") seed = static_cast<unsigned>(std::stoul(argv[i + 1]));
    else if (flag == "--epochs") epochs = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "chaos_bench: unknown option %s (expected --seed N or --epochs N)\n", argv[i]);
      return 2;
    }
  }
  const fs::path tmp = fs::temp_directory_path();
  const std::string job = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_ps.yaml";
  auto dir = [&](const std::string& name) { return tmp / fmt::format("trib_chaos_{}_{}", name, ::getpid()); };
  auto args = [&](const std::string& name) {
    return fmt::format(
        "{} --output {} --set threads.intra=1 --set training.train_metrics=false --set data.train_subset=24000"
        " --set data.test_subset=2000 --set training.epochs={} --set cluster.ps=2 --set cluster.workers=3"
        " --set training.checkpoint_every=25",
        job, dir(name).string(), epochs);
  };
  // The schedule: the worker at the chief's checkpoint 25 or 50, the server 50 or 75 steps later.
  std::mt19937 rng(seed);
  const int a = 25 * (1 + static_cast<int>(rng() % 2));
  const int b = a + 25 * (2 + static_cast<int>(rng() % 2));

  Run clean = run(args("clean"), dir("clean"), {});
  Run chaos = run(args("chaos"), dir("chaos"), {Kill{"worker1", a, {}, {}}, Kill{"ps1", b, {}, {}}});
  fs::remove_all(dir("clean"));
  fs::remove_all(dir("chaos"));

  int faults = 0, survived = 0;
  std::optional<double> worker_s, ps_s;
  for (const Kill& k : chaos.kills) {
    if (!k.at) continue;
    ++faults;
    if (chaos.exit_code == 0 && k.recovery_s) ++survived;
    (k.process.starts_with("worker") ? worker_s : ps_s) = k.recovery_s;
  }
  fmt::print(
      "bench=chaos strategy=ps mode=async workers=3 ps=2 seed={} faults={} survived={} accuracy={} "
      "fault_free_accuracy={} worker_recovery_s={} ps_recovery_s={} coordinator_recovery_s=na steps_redone={}\n",
      seed, faults, survived, chaos.accuracy ? fmt::format("{:.4f}", *chaos.accuracy) : "na",
      clean.accuracy ? fmt::format("{:.4f}", *clean.accuracy) : "na", seconds(worker_s), seconds(ps_s),
      chaos.steps_redone);
  return clean.exit_code == 0 && chaos.exit_code == 0 ? 0 : 1;
}
