#include "net/connection_base.h"

#include <fmt/format.h>

#include "net/remote_error.h"

namespace trib::net {
namespace {

Message to_message(InboundFrame& frame) {
  return Message{frame.header.method, std::move(frame.body), std::move(frame.tensor)};
}

std::string what_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

ConnectionBase::ConnectionBase(std::shared_ptr<NetContext> context, Handlers handlers)
    : context_(std::move(context)), handlers_(std::move(handlers)) {}

std::string ConnectionBase::close_reason() const {
  std::lock_guard lock(close_mu_);
  return close_reason_;
}

std::future<Message> ConnectionBase::request(Message message, RequestOptions request_options) {
  OutgoingFrame frame{MessageType::request, message.method, 0,
                      std::as_bytes(std::span(message.body)), &message.tensor};
  TRIB_CHECK(payload_bytes(frame) <= options().max_frame_bytes, InvalidArgument,
             "request to {} of {} bytes exceeds max_frame_bytes {}", peer_.to_string(),
             payload_bytes(frame), options().max_frame_bytes);
  auto timeout = request_options.timeout.count() > 0 ? request_options.timeout
                                                     : options().request_timeout;
  auto started = pending_.add(PendingRequests::Clock::now() + timeout,
                              std::move(request_options.reply_into));
  frame.tag = started.tag;
  deadline_added(PendingRequests::Clock::now() + timeout);
  try {
    send_frame(frame);
  } catch (...) {
    pending_.fail(started.tag, std::current_exception());
  }
  return std::move(started.reply);
}

void ConnectionBase::notify(Message message) {
  OutgoingFrame frame{MessageType::notify, message.method, 0,
                      std::as_bytes(std::span(message.body)), &message.tensor};
  TRIB_CHECK(payload_bytes(frame) <= options().max_frame_bytes, InvalidArgument,
             "message to {} of {} bytes exceeds max_frame_bytes {}", peer_.to_string(),
             payload_bytes(frame), options().max_frame_bytes);
  TRIB_CHECK(is_open(), Unavailable, "{}", close_reason());
  send_frame(frame);
}

void ConnectionBase::dispatch(InboundFrame frame) {
  std::uint64_t tag = frame.header.tag;
  switch (frame.type()) {
    case MessageType::response:
      pending_.complete(tag, to_message(frame));
      return;
    case MessageType::error_response:
      pending_.fail(tag, make_remote_error(frame.header.method,
                                           fmt::format("{}: {}", peer_.to_string(), frame.body)));
      return;
    case MessageType::request:
    case MessageType::notify: {
      // The task keeps the connection alive until its reply is sent.
      auto self = weak_from_this().lock();
      if (!self || !executor_) return;
      auto type = frame.type();
      {
        std::lock_guard lock(close_mu_);
        ++(type == MessageType::request ? queued_requests_ : queued_notifies_);
      }
      executor_->submit([self, tag, type, message = to_message(frame)]() mutable {
        self->serve(tag, type, std::move(message));
      });
      return;
    }
    default:
      return;  // heartbeats and goodbyes are the subclass's business
  }
}

void ConnectionBase::served(MessageType type) {
  {
    std::lock_guard lock(close_mu_);
    --(type == MessageType::request ? queued_requests_ : queued_notifies_);
  }
  served_cv_.notify_all();
}

void ConnectionBase::serve(std::uint64_t tag, MessageType type, Message request) {
  struct Served {
    ConnectionBase* self;
    MessageType type;
    ~Served() { self->served(type); }
  } served_on_exit{this, type};
  // A notification received before the peer's goodbye is still delivered: the peer counts
  // it sent. A request is not served once closed: nobody is left to take its reply.
  if (owner_closed_.load() || (type == MessageType::request && !is_open())) return;
  Message reply;
  try {
    TRIB_CHECK(static_cast<bool>(handlers_.on_request), Unavailable,
               "{} serves no requests", context_->self().role);
    reply = handlers_.on_request(std::move(request), peer_);
  } catch (...) {
    if (type == MessageType::request) {
      send_error_reply(tag, std::current_exception());
    } else {
      context_->log(fmt::format("handler for a message from {} failed: {}", peer_.to_string(),
                                what_of(std::current_exception())));
    }
    return;
  }
  if (type != MessageType::request) return;
  OutgoingFrame frame{MessageType::response, reply.method, tag,
                      std::as_bytes(std::span(reply.body)), &reply.tensor};
  if (payload_bytes(frame) > options().max_frame_bytes) {
    send_error_reply(tag, std::make_exception_ptr(InvalidArgument(fmt::format(
                              "reply of {} bytes exceeds max_frame_bytes {}",
                              payload_bytes(frame), options().max_frame_bytes))));
    return;
  }
  try {
    send_frame(frame);
  } catch (...) {
    // The connection is closed by the failed send; the requester sees that instead.
  }
}

void ConnectionBase::send_error_reply(std::uint64_t tag, std::exception_ptr error) {
  std::string message = what_of(error);
  OutgoingFrame frame{MessageType::error_response,
                      static_cast<std::uint32_t>(remote_error_code(error)), tag,
                      std::as_bytes(std::span(message)), nullptr};
  try {
    send_frame(frame);
  } catch (...) {
    // As above: the connection's failure is reported instead.
  }
}

bool ConnectionBase::mark_closed(const std::string& reason, CloseKind kind) {
  if (kind == CloseKind::local) {
    owner_closed_ = true;
    served_cv_.notify_all();  // a close handler waiting for notifications now has nobody to tell
  }
  {
    std::lock_guard lock(close_mu_);
    if (!close_reason_.empty()) return false;
    close_reason_ = reason;
    closed_locally_ = kind == CloseKind::local;
  }
  bool was_open = open_.exchange(false);
  if (was_open) context_->stats().connections_closed++;
  pending_.close(reason);
  if (kind == CloseKind::fault && was_open) context_->log(reason);
  return true;
}

void ConnectionBase::drain_notifications() {
  std::unique_lock lock(close_mu_);
  // Bounded: a notification handler that blocks must not hold the close back for long.
  served_cv_.wait_for(lock, options().peer_timeout, [&] {
    return queued_notifies_ == 0 || queued_requests_ > 0 || owner_closed_.load();
  });
}

void ConnectionBase::notify_closed_last() {
  std::string reason;
  {
    std::lock_guard lock(close_mu_);
    if (closed_locally_ || close_reason_.empty()) return;
    reason = close_reason_;
  }
  // Copies, because the handler may destroy this connection (and its members) as it runs.
  CloseHandler on_close = handlers_.on_close;
  PeerIdentity peer = peer_;
  if (on_close) on_close(peer, reason);
}

std::optional<PendingRequests::Clock::time_point> ConnectionBase::expire_requests() {
  pending_.expire(PendingRequests::Clock::now(), peer_.to_string(),
                  context_->stats().requests_timed_out);
  return pending_.next_deadline();
}

}  // namespace trib::net
