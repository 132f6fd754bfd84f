// What TCP and in-process connections share: the request table, tag matching, handler
// dispatch with replies under the request's tag, and the first-failure-wins close. A
// subclass supplies send_frame() and a receive thread that feeds dispatch().
#pragma once

#include <atomic>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "net/frame_reader.h"
#include "net/frame_writer.h"
#include "net/pending_requests.h"
#include "net/serial_executor.h"
#include "trib/net/transport.h"

namespace trib::net {

class ConnectionBase : public Connection, public std::enable_shared_from_this<ConnectionBase> {
 public:
  std::future<Message> request(Message message, RequestOptions options = {}) override;
  void notify(Message message) override;
  const PeerIdentity& peer() const override { return peer_; }
  bool is_open() const override { return open_.load(); }
  std::string close_reason() const override;

 protected:
  ConnectionBase(std::shared_ptr<NetContext> context, Handlers handlers);

  // Sends one frame. Throws (Unavailable, Timeout) if it cannot; a subclass closes the
  // connection itself when a send breaks the stream.
  virtual void send_frame(const OutgoingFrame& frame) = 0;

  // A request with this deadline was added: the thread that expires requests must wake
  // by then if it planned to sleep longer.
  virtual void deadline_added(PendingRequests::Clock::time_point deadline) = 0;

  // Set once, before the connection is used by anyone but its creator.
  void set_peer(PeerIdentity peer) { peer_ = std::move(peer); }
  void mark_open() { open_ = true; }

  // Routes a received session frame: responses complete their request, requests and
  // notifications go to the handler (on the executor), with replies under the same tag.
  void dispatch(InboundFrame frame);
  // Where a response's tensor should land; see PendingRequests::claim_reply_destination.
  Tensor claim_reply_destination(std::uint64_t tag) {
    return pending_.claim_reply_destination(tag);
  }

  enum class CloseKind {
    local,    // close() by the owner: no close handler, no log line
    by_peer,  // an orderly goodbye: close handler, no log line
    fault,    // timeout, rejected frame, broken stream: close handler and a log line
  };
  // Closes with `reason` unless already closed (first reason wins); fails pending requests.
  // Returns whether this call was the one that closed.
  bool mark_closed(const std::string& reason, CloseKind kind);
  // Once the receive thread has read its last frame: waits until the notifications received
  // have been handled, so that a peer's last messages reach the owner before its close
  // handler does (and before the connection counts as finished, to be reaped), unless a
  // request handler is in the executor's way (it may be waiting for this very close) or the
  // owner closed the connection. Bounded by the peer timeout.
  void drain_notifications();
  // Calls the close handler if the connection was closed by anything but close(). Meant
  // to be the last thing the receive thread does: the handler may drop the last reference.
  void notify_closed_last();
  // Fails requests past their deadline; returns the next deadline to wake for, if any.
  std::optional<PendingRequests::Clock::time_point> expire_requests();
  // Stops the handler executor; subclasses call it from their destructor, before their
  // own members (used by send_frame) are destroyed.
  void stop_handlers() { executor_.reset(); }

  // The payload bound of an inbound request or notification (Handlers::request_limit).
  std::uint64_t request_limit(std::uint32_t method) const {
    std::uint64_t frame = context_->options().max_frame_bytes;
    return handlers_.request_limit ? std::min(frame, handlers_.request_limit(method)) : frame;
  }

  const std::shared_ptr<NetContext>& context() const { return context_; }
  const NetOptions& options() const { return context_->options(); }

 private:
  void serve(std::uint64_t tag, MessageType type, Message request);
  void served(MessageType type);  // a dispatched request or notification left the executor
  void send_error_reply(std::uint64_t tag, std::exception_ptr error);

  std::shared_ptr<NetContext> context_;
  Handlers handlers_;
  PeerIdentity peer_;
  PendingRequests pending_;
  std::atomic<bool> open_{false};
  mutable std::mutex close_mu_;
  std::string close_reason_;
  bool closed_locally_ = false;
  // Once the owner calls close() no handler runs again: it may be destroying itself.
  std::atomic<bool> owner_closed_{false};
  // Dispatched and not yet served (close_mu_): drain_notifications() waits for them.
  int queued_notifies_ = 0, queued_requests_ = 0;
  std::condition_variable served_cv_;
  std::unique_ptr<SerialExecutor> executor_ = std::make_unique<SerialExecutor>();
};

}  // namespace trib::net
