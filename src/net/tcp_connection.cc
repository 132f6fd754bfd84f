#include "net/tcp_connection.h"

#include <fmt/format.h>

#include <limits>

#include "net/tcp_address.h"

namespace trib::net {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

Clock::time_point from_ns(std::int64_t ns) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

// "10.0.0.2" of "10.0.0.2:5000", "::1" of "[::1]:5000".
std::string source_host_of(const std::string& address) {
  try {
    return parse_host_port(address, "").host;
  } catch (const InvalidArgument&) {
    return address;
  }
}

// A goodbye must not hold up close() behind a peer that stopped reading.
constexpr std::chrono::milliseconds kGoodbyeTimeout{100};

}  // namespace

TcpConnection::TcpConnection(std::shared_ptr<NetContext> context, Socket socket,
                             Handlers handlers)
    : ConnectionBase(std::move(context), std::move(handlers)), socket_(std::move(socket)) {}

std::shared_ptr<TcpConnection> TcpConnection::start_authenticated(
    std::shared_ptr<NetContext> context, Socket socket, HandshakeResult handshake,
    Handlers handlers) {
  auto c = std::make_shared<TcpConnection>(std::move(context), std::move(socket),
                                           std::move(handlers));
  c->address_ = handshake.peer.address;
  c->open_session(handshake);
  c->receive_thread_ = std::thread([raw = c.get()] { raw->receive_main(""); });
  c->heartbeat_thread_ = std::thread([raw = c.get()] { raw->heartbeat_main(); });
  return c;
}

std::shared_ptr<TcpConnection> TcpConnection::start_accepted(std::shared_ptr<NetContext> context,
                                                             Socket socket, std::string address,
                                                             Handlers handlers) {
  auto c = std::make_shared<TcpConnection>(std::move(context), std::move(socket),
                                           std::move(handlers));
  c->address_ = address;
  c->source_host_ = source_host_of(address);
  c->set_peer(PeerIdentity{"", 0, address});
  c->receive_thread_ = std::thread([raw = c.get(), address] { raw->receive_main(address); });
  c->heartbeat_thread_ = std::thread([raw = c.get()] { raw->heartbeat_main(); });
  return c;
}

bool TcpConnection::pending_handshake() const {
  if (finished() || is_open()) return false;
  std::lock_guard lock(wake_mu_);
  return !stopping_;
}

TcpConnection::~TcpConnection() {
  close();
  join_or_detach(receive_thread_);
  join_or_detach(heartbeat_thread_);
  stop_handlers();
}

void TcpConnection::open_session(const HandshakeResult& handshake) {
  set_peer(handshake.peer);
  if (encrypts(handshake.keys.mac)) {
    send_cipher_ = std::make_unique<FrameCipher>(FrameCipher::Direction::seal, handshake.keys.send);
    receive_cipher_ =
        std::make_unique<FrameCipher>(FrameCipher::Direction::open, handshake.keys.receive);
  } else {
    send_mac_ = std::make_unique<FrameMac>(handshake.keys.mac, handshake.keys.send);
    receive_mac_ = std::make_unique<FrameMac>(handshake.keys.mac, handshake.keys.receive);
  }
  last_send_ns_ = now_ns();
  mark_open();
  context()->stats().connections_opened++;
  {
    std::lock_guard lock(wake_mu_);
    session_ready_ = true;
  }
  wake_.notify_all();
}

void TcpConnection::stop_threads() {
  {
    std::lock_guard lock(wake_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  socket_.shutdown_both();  // the receive thread's next read sees the end of the stream
}

void TcpConnection::fail(const std::string& detail, CloseKind kind) {
  std::string peer = this->peer().to_string();
  std::string reason = detail.find(peer) != std::string::npos
                           ? detail
                           : fmt::format("connection to {}: {}", peer, detail);
  if (mark_closed(reason, kind)) stop_threads();
}

void TcpConnection::close() {
  // Closed first, so that the peer's reaction to our goodbye cannot be taken for the reason.
  bool was_open = is_open();
  mark_closed(fmt::format("connection to {} was closed locally", address_), CloseKind::local);
  if (was_open) {
    std::unique_lock lock(send_mu_, std::try_to_lock);
    if (lock.owns_lock()) {
      try {
        seal_and_write(OutgoingFrame{MessageType::goodbye, 0, 0, {}, nullptr}, kGoodbyeTimeout);
      } catch (...) {
        // Best effort: the peer learns of the close from the end of the stream anyway.
      }
    }
  }
  stop_threads();
}

void TcpConnection::send_frame(const OutgoingFrame& frame) {
  std::lock_guard lock(send_mu_);
  TRIB_CHECK(is_open(), Unavailable, "{}", close_reason());
  write_locked(frame);
}

std::size_t TcpConnection::seal_and_write(const OutgoingFrame& frame,
                                          std::chrono::milliseconds timeout) {
  if (send_cipher_) {
    TRIB_CHECK(frame.body.size() <= std::numeric_limits<std::uint32_t>::max(), InvalidArgument,
               "message body of {} bytes exceeds the 4 GiB body limit", frame.body.size());
    // Each sequence number is used once, even if this write fails half-way: the
    // connection is then closed, never written to again.
    return write_encrypted_frame(socket_.fd(), frame, ++send_sequence_, *send_cipher_,
                                 send_scratch_, timeout, peer().to_string());
  }
  // Sealing can refuse the frame (InvalidArgument) before a byte is written: not fatal.
  SealedFrame sealed = seal_frame(frame, send_sequence_ + 1, send_mac_.get());
  ++send_sequence_;
  auto iov = sealed.iovecs();
  return write_all(socket_.fd(), iov, timeout, peer().to_string());
}

void TcpConnection::write_locked(const OutgoingFrame& frame) {
  std::size_t written = 0;
  try {
    written = seal_and_write(frame, options().peer_timeout);
  } catch (const InvalidArgument&) {
    throw;  // refused before a byte was written: the connection stays usable
  } catch (const Timeout& e) {
    context()->stats().peer_timeouts++;
    fail(e.what());
    throw Unavailable(close_reason());
  } catch (const std::exception& e) {
    fail(e.what());
    throw Unavailable(close_reason());
  }
  last_send_ns_ = now_ns();
  context()->stats().frames_sent++;
  context()->stats().bytes_sent += written;
}

void TcpConnection::deadline_added(PendingRequests::Clock::time_point deadline) {
  {
    std::lock_guard lock(wake_mu_);
    if (deadline >= planned_wake_) return;
    replan_ = true;
  }
  wake_.notify_all();
}

void TcpConnection::receive_main(std::string accepted_from) {
  if (!accepted_from.empty()) {
    try {
      open_session(server_handshake(socket_.fd(), *context(), accepted_from,
                                    [this] { heard_hello_ = true; }));
    } catch (const std::exception& e) {
      bool stopping = false;
      {
        std::lock_guard lock(wake_mu_);
        stopping = stopping_;
      }
      if (!stopping) {
        context()->log_untrusted("handshake(s) failed",
                                 fmt::format("rejected connection from {}: {}", accepted_from,
                                             e.what()));
      }
      mark_closed(fmt::format("handshake with {} failed: {}", accepted_from, e.what()),
                  CloseKind::local);  // never opened: nobody to tell
      stop_threads();
      finished_ = true;
      return;
    }
  }
  receive_loop();
  drain_notifications();
  finished_ = true;
  notify_closed_last();  // must stay last: the close handler may destroy this connection
}

void TcpConnection::receive_loop() {
  NetStats& stats = context()->stats();
  FrameReader reader(socket_.fd(), peer().to_string(), options().max_frame_bytes,
                     options().allocator);
  reader.set_payload_limit([this](const FrameHeader& h) {
    MessageType t = h.message_type();
    return t == MessageType::request || t == MessageType::notify ? request_limit(h.method)
                                                                 : options().max_frame_bytes;
  });
  DestinationChooser choose = [this](const FrameHeader& h, const TensorDescriptor&) {
    return h.message_type() == MessageType::response ? claim_reply_destination(h.tag) : Tensor();
  };
  try {
    for (;;) {
      InboundFrame frame =
          receive_cipher_ ? reader.read_encrypted(*receive_cipher_, receive_sequence_ + 1,
                                                  options().peer_timeout, choose)
                          : reader.read(receive_mac_.get(), receive_sequence_ + 1,
                                        options().peer_timeout, choose);
      ++receive_sequence_;
      stats.frames_received++;
      stats.bytes_received += reader.last_frame_bytes();
      switch (frame.type()) {
        case MessageType::heartbeat:
          break;
        case MessageType::goodbye:
          fail(fmt::format("{} closed the connection", peer().to_string()), CloseKind::by_peer);
          return;
        case MessageType::request:
        case MessageType::response:
        case MessageType::error_response:
        case MessageType::notify:
          dispatch(std::move(frame));
          break;
        default:
          throw FrameRejected(FrameRejected::Kind::malformed,
                              fmt::format("unexpected {} frame after the handshake",
                                          message_type_name(frame.type())));
      }
    }
  } catch (const FrameRejected& e) {
    switch (e.kind()) {
      case FrameRejected::Kind::malformed: stats.malformed_frames++; break;
      case FrameRejected::Kind::bad_mac: stats.mac_failures++; break;
      case FrameRejected::Kind::bad_sequence: stats.sequence_failures++; break;
    }
    fail(fmt::format("closing connection to {}: rejected frame: {}", peer().to_string(),
                     e.what()));
  } catch (const Timeout& e) {
    if (is_open()) stats.peer_timeouts++;
    fail(e.what());
  } catch (const std::bad_alloc&) {
    fail("out of memory while receiving a frame");
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void TcpConnection::heartbeat_main() {
  {
    std::unique_lock lock(wake_mu_);
    wake_.wait(lock, [&] { return session_ready_ || stopping_; });
    if (stopping_) return;
  }
  const auto interval = options().heartbeat_interval;
  // While another sender holds the socket (a large tensor), its bytes are the heartbeat;
  // check back a few times per interval.
  const auto recheck = std::max<Clock::duration>(interval / 10, std::chrono::milliseconds(1));
  for (;;) {
    auto next_deadline = expire_requests();
    auto now = Clock::now();
    auto wake_at = std::max(from_ns(last_send_ns_.load()) + interval, now + recheck);
    if (next_deadline) wake_at = std::min(wake_at, *next_deadline);
    {
      std::unique_lock lock(wake_mu_);
      planned_wake_ = wake_at;
      if (wake_.wait_until(lock, wake_at, [&] { return stopping_ || replan_; }) && stopping_) {
        return;
      }
      replan_ = false;
    }
    if (Clock::now() - from_ns(last_send_ns_.load()) < interval) continue;
    std::unique_lock lock(send_mu_, std::try_to_lock);
    if (!lock.owns_lock() || !is_open()) continue;
    try {
      write_locked(OutgoingFrame{MessageType::heartbeat, 0, 0, {}, nullptr});
    } catch (...) {
      return;  // the connection is closed by the failed write
    }
  }
}

}  // namespace trib::net
