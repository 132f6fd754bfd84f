// A connection over one TCP socket. Three threads: the receive thread (runs the server
// handshake for accepted sockets, then reads and verifies frames), the heartbeat thread
// (sends heartbeats when the link is idle and expires overdue requests) and the handler
// executor of ConnectionBase. Senders share the socket under a mutex that also orders
// sequence numbers.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "net/connection_base.h"
#include "net/frame_mac.h"
#include "net/handshake.h"
#include "net/socket_io.h"

namespace trib::net {

class TcpConnection final : public ConnectionBase {
 public:
  // A client connection whose handshake already succeeded.
  static std::shared_ptr<TcpConnection> start_authenticated(std::shared_ptr<NetContext> context,
                                                            Socket socket,
                                                            HandshakeResult handshake,
                                                            Handlers handlers);
  // An accepted socket from `address`; the server handshake runs on the receive thread and
  // the connection opens (is_open()) only once it succeeds.
  static std::shared_ptr<TcpConnection> start_accepted(std::shared_ptr<NetContext> context,
                                                       Socket socket, std::string address,
                                                       Handlers handlers);
  ~TcpConnection() override;

  void close() override;
  // Whether the receive thread is done (handshake failed or connection closed).
  bool finished() const { return finished_.load(); }

  TcpConnection(std::shared_ptr<NetContext> context, Socket socket, Handlers handlers);

 private:
  void send_frame(const OutgoingFrame& frame) override;
  void deadline_added(PendingRequests::Clock::time_point deadline) override;
  void open_session(const HandshakeResult& handshake);
  // Writes one frame with the send lock held; closes the connection if the write fails.
  void write_locked(const OutgoingFrame& frame);
  void receive_main(std::string accepted_from);
  void receive_loop();
  void heartbeat_main();
  // Closes because of a fault (not close()); the reason names the peer.
  void fail(const std::string& detail, CloseKind kind = CloseKind::fault);
  void stop_threads();

  Socket socket_;
  std::string address_;  // the peer's address, fixed before any thread starts
  std::mutex send_mu_;
  std::unique_ptr<FrameMac> send_mac_;
  std::uint64_t send_sequence_ = 0;
  std::unique_ptr<FrameMac> receive_mac_;
  std::uint64_t receive_sequence_ = 0;
  std::atomic<std::int64_t> last_send_ns_{0};
  std::atomic<bool> finished_{false};

  std::mutex wake_mu_;
  std::condition_variable wake_;  // wakes the heartbeat thread on open and on close
  bool session_ready_ = false;
  bool stopping_ = false;
  PendingRequests::Clock::time_point planned_wake_{};  // when the heartbeat thread wakes next
  bool replan_ = false;  // a request deadline came before planned_wake_

  std::thread receive_thread_;
  std::thread heartbeat_thread_;
};

}  // namespace trib::net
