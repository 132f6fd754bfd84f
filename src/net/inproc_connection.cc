#include "net/inproc_connection.h"

#include <fmt/format.h>

namespace trib::net {
namespace {

using Clock = PendingRequests::Clock;

// Wakes the receive thread at least this often even with no deadline pending.
constexpr std::chrono::milliseconds kIdleWake{1000};

InboundFrame copy_frame(const OutgoingFrame& out) {
  InboundFrame in;
  FrameHeader& h = in.header;
  h.type = static_cast<std::uint8_t>(out.type);
  h.method = out.method;
  h.tag = out.tag;
  h.body_length = static_cast<std::uint32_t>(out.body.size());
  h.payload_length = payload_bytes(out);
  in.body.assign(reinterpret_cast<const char*>(out.body.data()), out.body.size());
  if (out.tensor != nullptr && out.tensor->defined()) {
    h.flags = kFlagHasTensor;
    in.tensor = out.tensor->clone();  // the receiver must never share the sender's memory
  }
  return in;
}

}  // namespace

InProcConnection::InProcConnection(std::shared_ptr<NetContext> context, PeerIdentity peer,
                                   Handlers handlers)
    : ConnectionBase(std::move(context), std::move(handlers)) {
  set_peer(std::move(peer));
}

void InProcConnection::connect_pair(const std::shared_ptr<InProcConnection>& a,
                                    const std::shared_ptr<InProcConnection>& b) {
  a->peer_end_ = b;
  b->peer_end_ = a;
  for (const auto& end : {a, b}) {
    end->mark_open();
    end->context()->stats().connections_opened++;
    end->receive_thread_ = std::thread([raw = end.get()] { raw->receive_main(); });
  }
}

InProcConnection::~InProcConnection() {
  close();
  join_or_detach(receive_thread_);
  stop_handlers();
}

void InProcConnection::close() {
  // Closed first, so that the peer's reaction to our goodbye cannot be taken for the reason.
  bool was_open = is_open();
  mark_closed(fmt::format("connection to {} was closed locally", peer().to_string()),
              CloseKind::local);
  if (was_open) say_goodbye();
  stop();
}

void InProcConnection::say_goodbye() {
  if (auto other = peer_end_.lock()) {
    other->enqueue(copy_frame(OutgoingFrame{MessageType::goodbye, 0, 0, {}, nullptr}));
  }
}

void InProcConnection::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
}

void InProcConnection::fail(const std::string& reason, CloseKind kind) {
  if (!mark_closed(reason, kind)) return;
  say_goodbye();  // the peer sees its socket close, as over TCP
  stop();
}

void InProcConnection::send_frame(const OutgoingFrame& frame) {
  TRIB_CHECK(is_open(), Unavailable, "{}", close_reason());
  auto other = peer_end_.lock();
  TRIB_CHECK(other != nullptr, Unavailable, "{} is gone", peer().to_string());
  InboundFrame copy = copy_frame(frame);
  context()->stats().frames_sent++;
  context()->stats().bytes_sent += kHeaderBytes + copy.header.payload_length;
  other->enqueue(std::move(copy));
}

void InProcConnection::enqueue(InboundFrame frame) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;  // like bytes sent to a closed socket
    inbox_.push_back(std::move(frame));
  }
  wake_.notify_one();
}

void InProcConnection::deadline_added(Clock::time_point deadline) {
  {
    std::lock_guard lock(mu_);
    if (deadline >= planned_wake_) return;
    replan_ = true;
  }
  wake_.notify_one();
}

void InProcConnection::receive_main() {
  for (;;) {
    auto next_deadline = expire_requests();
    auto wake_at = std::min(Clock::now() + kIdleWake, next_deadline.value_or(Clock::time_point::max()));
    InboundFrame frame;
    {
      std::unique_lock lock(mu_);
      planned_wake_ = wake_at;
      wake_.wait_until(lock, wake_at, [&] { return stopping_ || replan_ || !inbox_.empty(); });
      replan_ = false;
      if (stopping_) break;
      if (inbox_.empty()) continue;
      frame = std::move(inbox_.front());
      inbox_.pop_front();
    }
    handle(std::move(frame));
  }
  drain_notifications();
  finished_ = true;
  notify_closed_last();  // must stay last: the close handler may destroy this connection
}

void InProcConnection::handle(InboundFrame frame) {
  NetStats& stats = context()->stats();
  stats.frames_received++;
  stats.bytes_received += kHeaderBytes + frame.header.payload_length;
  const bool inbound_request =
      frame.type() == MessageType::request || frame.type() == MessageType::notify;
  const std::uint64_t limit =
      inbound_request ? request_limit(frame.header.method) : options().max_frame_bytes;
  if (frame.header.payload_length > limit) {
    stats.malformed_frames++;
    fail(fmt::format("closing connection to {}: rejected frame: frame claims {} payload bytes, "
                     "limit is {}",
                     peer().to_string(), frame.header.payload_length, limit));
    return;
  }
  switch (frame.type()) {
    case MessageType::goodbye:
      fail(fmt::format("{} closed the connection", peer().to_string()), CloseKind::by_peer);
      return;
    case MessageType::response:
      if (frame.tensor.defined()) {
        Tensor into = claim_reply_destination(frame.header.tag);
        if (into.defined() && into.dtype() == frame.tensor.dtype() &&
            into.nbytes() == frame.tensor.nbytes()) {
          into.copy_from(frame.tensor.reshape(into.shape()));
          frame.tensor = into.reshape(frame.tensor.shape());  // the sender's shape, our memory
        }
      }
      break;
    default:
      break;
  }
  dispatch(std::move(frame));
}

}  // namespace trib::net
