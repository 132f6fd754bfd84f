// A real etcd cluster on loopback for tests: Debian's etcd-server binary, one process per
// member, free ports, data and logs in a temporary directory, all killed at the end.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/child_process.h"
#include "trib/cluster/etcd_options.h"

namespace trib::cluster::testing {

class EtcdTestCluster {
 public:
  // The etcd binary ($TRIB_ETCD, else etcd on PATH), or nullopt when it is not installed.
  static std::optional<std::string> binary();

  // Starts `members` members and waits (bounded) until every one reports healthy; throws
  // naming the member and the tail of its log if one exits or stays unhealthy (after three
  // tries on fresh ports).
  explicit EtcdTestCluster(int members = 3);
  ~EtcdTestCluster();

  std::string url() const;  // etcd://127.0.0.1:p0,127.0.0.1:p1,...
  // Options for a store or registry of job `job`, with short timeouts for tests.
  EtcdOptions options(const std::string& job) const;
  int size() const { return static_cast<int>(members_.size()); }
  int client_port(int member) const { return members_.at(static_cast<std::size_t>(member)).client_port; }
  int peer_port(int member) const { return members_.at(static_cast<std::size_t>(member)).peer_port; }

  void kill(int member);  // SIGKILL, then reap
  void signal(int member, int sig);  // SIGSTOP freezes a member, SIGCONT wakes it
  // The member that leads the raft group now, as its members report it; -1 if none does.
  int leader();
  bool running(int member);
  // Waits until member reports healthy (it has a leader); false at the deadline.
  bool wait_healthy(int member, std::chrono::milliseconds timeout);
  std::string log_tail(int member) const;

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    std::unique_ptr<ChildProcess> process;
  };
  void start(const std::string& etcd, int members, int attempt);

  std::filesystem::path dir_;
  std::vector<Member> members_;
};

}  // namespace trib::cluster::testing
