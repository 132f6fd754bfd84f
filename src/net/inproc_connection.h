// One endpoint of an in-process connection. Frames go straight into the peer endpoint's
// inbox (body copied, tensor cloned, as if they had crossed a wire); each endpoint's
// receive thread drains its inbox, expires overdue requests and dispatches like TCP.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "net/connection_base.h"

namespace trib::net {

class InProcConnection final : public ConnectionBase {
 public:
  InProcConnection(std::shared_ptr<NetContext> context, PeerIdentity peer, Handlers handlers);
  ~InProcConnection() override;

  // Links two endpoints and starts both receive threads.
  static void connect_pair(const std::shared_ptr<InProcConnection>& a,
                           const std::shared_ptr<InProcConnection>& b);

  void close() override;
  bool finished() const { return finished_.load(); }

 private:
  void send_frame(const OutgoingFrame& frame) override;
  void deadline_added(PendingRequests::Clock::time_point deadline) override;
  void enqueue(InboundFrame frame);
  void receive_main();
  void handle(InboundFrame frame);
  void fail(const std::string& reason, CloseKind kind = CloseKind::fault);
  void say_goodbye();
  void stop();

  std::weak_ptr<InProcConnection> peer_end_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<InboundFrame> inbox_;
  bool stopping_ = false;
  bool replan_ = false;
  PendingRequests::Clock::time_point planned_wake_{};
  std::atomic<bool> finished_{false};
  std::thread receive_thread_;
};

}  // namespace trib::net
