// A TCP proxy in front of one etcd member that injects two faults: it can lose a reply (it
// forwards the request, waits for the member's answer, so the request has been applied, and
// closes the client's connection instead of passing the answer on: the failure that makes a
// retried write ambiguous), and it can hold a request until the test lets it go (to order a
// client's reads against other writes).
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace trib::cluster::testing {

class EtcdFaultProxy {
 public:
  // Listens on a free loopback port and forwards to 127.0.0.1:upstream_port.
  explicit EtcdFaultProxy(int upstream_port);
  ~EtcdFaultProxy();

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The next `n` requests whose first bytes contain `path` ("/v3/kv/txn") lose their reply.
  void drop_replies_to(const std::string& path, int n);
  int dropped() const { return dropped_; }
  // Requests whose first bytes contain `needle` wait until release(); held() counts them.
  void hold_requests_containing(const std::string& needle);
  int held() const { return held_; }
  void release();

 private:
  void serve();
  void relay(int client);

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::string path_;
  std::atomic<int> to_drop_{0};
  std::atomic<int> dropped_{0};
  std::string hold_;
  std::atomic<bool> holding_{false};
  std::atomic<int> held_{0};
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> relays_;
};

}  // namespace trib::cluster::testing
