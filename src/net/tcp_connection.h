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
#include "net/frame_cipher.h"
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
  // An accepted connection still in its handshake, not yet told to stop.
  bool pending_handshake() const;
  // Whether an accepted connection's client has sent its hello (a real client does at once).
  bool heard_hello() const { return heard_hello_.load(); }
  // The source address's host, for per-source limits ("" for client connections).
  const std::string& source_host() const { return source_host_; }

  TcpConnection(std::shared_ptr<NetContext> context, Socket socket, Handlers handlers);

 private:
  void send_frame(const OutgoingFrame& frame) override;
  void deadline_added(PendingRequests::Clock::time_point deadline) override;
  void open_session(const HandshakeResult& handshake);
  // Writes one frame with the send lock held; closes the connection if the write fails.
  void write_locked(const OutgoingFrame& frame);
  // Seals (MAC or encryption, as the session agreed) and writes; send lock held.
  std::size_t seal_and_write(const OutgoingFrame& frame, std::chrono::milliseconds timeout);
  void receive_main(std::string accepted_from);
  void receive_loop();
  void heartbeat_main();
  // Closes because of a fault (not close()); the reason names the peer.
  void fail(const std::string& detail, CloseKind kind = CloseKind::fault);
  void stop_threads();

  Socket socket_;
  std::string address_;  // the peer's address, fixed before any thread starts
  std::mutex send_mu_;
  // Exactly one of each pair is set once the session opens: MAC-only or encrypted.
  std::unique_ptr<FrameMac> send_mac_;
  std::unique_ptr<FrameCipher> send_cipher_;
  std::vector<std::byte> send_scratch_;  // ciphertext staging, under send_mu_
  std::uint64_t send_sequence_ = 0;
  std::unique_ptr<FrameMac> receive_mac_;
  std::unique_ptr<FrameCipher> receive_cipher_;
  std::uint64_t receive_sequence_ = 0;
  std::atomic<std::int64_t> last_send_ns_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> heard_hello_{false};
  std::string source_host_;

  mutable std::mutex wake_mu_;
  std::condition_variable wake_;  // wakes the heartbeat thread on open and on close
  bool session_ready_ = false;
  bool stopping_ = false;
  PendingRequests::Clock::time_point planned_wake_{};  // when the heartbeat thread wakes next
  bool replan_ = false;  // a request deadline came before planned_wake_

  std::thread receive_thread_;
  std::thread heartbeat_thread_;
};

}  // namespace trib::net
