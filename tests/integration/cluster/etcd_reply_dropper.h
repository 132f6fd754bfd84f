// A TCP proxy in front of one etcd member that can lose replies: it forwards a request to
// the member, waits for the member's answer (so the request has been applied), and closes
// the client's connection instead of passing the answer on. This is the failure that makes
// a retried write ambiguous.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace trib::cluster::testing {

class EtcdReplyDropper {
 public:
  // Listens on a free loopback port and forwards to 127.0.0.1:upstream_port.
  explicit EtcdReplyDropper(int upstream_port);
  ~EtcdReplyDropper();

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The next `n` requests whose first bytes contain `path` ("/v3/kv/txn") lose their reply.
  void drop_replies_to(const std::string& path, int n);
  int dropped() const { return dropped_; }

 private:
  void serve();
  void relay(int client);

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::string path_;
  std::atomic<int> to_drop_{0};
  std::atomic<int> dropped_{0};
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> relays_;
};

}  // namespace trib::cluster::testing
