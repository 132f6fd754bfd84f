// Test support: a multi-host job run as separate `trib coordinator`, `trib ps --join` and `trib
// worker --join` processes on loopback, with the test acting as each node's supervisor
// (systemd, Kubernetes, a script): a lost process is started again with the very command that
// started it (start()).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "e2e/trib_process.h"
#include "trib/cluster/local_cluster.h"

namespace trib::testing {

struct SupervisedJob {
  TempDir dir;
  std::string address = "127.0.0.1:" + std::to_string(free_port());
  fs::path run = dir.path() / "run";
  std::map<std::string, std::string> env{{cluster::kSecretEnv, kSecretHex}};
  std::unique_ptr<Trib> coordinator;

  // `trib coordinator CONFIG --listen ADDRESS --secret-file ... --output RUN --set OVERRIDE...`,
  // CONFIG being what `config` gives (it may write the file into `dir`).
  SupervisedJob(const std::string& name, const std::function<std::string(const TempDir&)>& config,
                const std::vector<std::string>& overrides)
      : dir(name) {
    std::vector<std::string> args{"coordinator", config(dir), "--listen", address, "--secret-file",
                                  dir.file("secret", kSecretHex), "--output", run.string()};
    for (const std::string& o : overrides) {
      args.push_back("--set");
      args.push_back(o);
    }
    coordinator = std::make_unique<Trib>("coordinator", args);
  }

  // Whether the coordinator is listening (within 20 s).
  bool ready() { return wait_until({coordinator.get()}, [&] { return coordinator->printed("waiting for"); }, 20s); }
  // The command a supervisor runs for `role` `index`, the first time and after every loss.
  std::unique_ptr<Trib> start(const std::string& role, int index, const std::string& name) {
    return std::make_unique<Trib>(name, std::vector<std::string>{role, "--join", address, "--index", std::to_string(index)},
                                  std::vector<std::string>{}, env);
  }
};

// tiny_job() with 2 servers and 2 asynchronous workers, written into `dir`.
inline std::string tiny_ps_config(const TempDir& dir) {
  return dir.file("job.yaml", tiny_job("cluster:\n  ps: 2\n  workers: 2\n  heartbeat_ms: 500\n  peer_timeout_ms: 3000\n"));
}

inline bool all_exited(const std::vector<Trib*>& procs) {
  for (Trib* p : procs)
    if (!p->exited()) return false;
  return true;
}

}  // namespace trib::testing
