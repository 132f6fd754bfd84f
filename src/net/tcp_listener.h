// Accepts TCP connections on one socket. Each accepted socket becomes a TcpConnection whose
// own thread runs the handshake, so a slow or hostile client never holds up the others.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "net/tcp_address.h"
#include "net/tcp_connection.h"
#include "trib/net/transport.h"

namespace trib::net {

class TcpListener final : public Listener {
 public:
  TcpListener(std::shared_ptr<NetContext> context, Socket socket, HostPort bound,
              Handlers handlers);
  ~TcpListener() override;

  std::string address() const override { return bound_.to_string(); }
  std::vector<std::shared_ptr<Connection>> connections() const override;

 private:
  void accept_main();
  void accept_ready();
  // Whether a new connection from `source_host` may start its handshake; may drop an
  // idle pending one to make room.
  bool admit(const std::string& source_host);
  // Drops connections whose receive thread has ended; returns them to be destroyed
  // outside the lock.
  std::vector<std::shared_ptr<TcpConnection>> take_finished();

  std::shared_ptr<NetContext> context_;
  Socket socket_;
  HostPort bound_;
  Handlers handlers_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<TcpConnection>> connections_;
  std::thread accept_thread_;
};

}  // namespace trib::net
