#include "net_test_support.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

#include "net/tcp_address.h"

namespace trib::net::testing {

LogSink LogCapture::sink() {
  return [this](std::string_view line) {
    std::lock_guard lock(mu_);
    lines_.emplace_back(line);
  };
}

std::vector<std::string> LogCapture::lines() const {
  std::lock_guard lock(mu_);
  return lines_;
}

bool LogCapture::wait_for(const std::vector<std::string>& fragments,
                          std::chrono::milliseconds timeout) const {
  return eventually(
      [&] {
        for (const std::string& line : lines()) {
          bool all = true;
          for (const std::string& f : fragments) all = all && line.find(f) != std::string::npos;
          if (all) return true;
        }
        return false;
      },
      timeout);
}

std::shared_ptr<Storage> CountingAllocator::allocate(std::size_t bytes) {
  count_++;
  std::size_t seen = largest_.load();
  while (bytes > seen && !largest_.compare_exchange_weak(seen, bytes)) {
  }
  return default_allocator().allocate(bytes);
}

NetOptions fast_options() {
  NetOptions o;
  o.heartbeat_interval = std::chrono::milliseconds(100);
  o.peer_timeout = std::chrono::milliseconds(1000);
  o.connect_timeout = std::chrono::milliseconds(2000);
  o.handshake_timeout = std::chrono::milliseconds(2000);
  o.request_timeout = std::chrono::milliseconds(10000);
  return o;
}

ClusterSecret test_secret() {
  return ClusterSecret::from_hex("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
}

ClusterSecret other_secret() {
  return ClusterSecret::from_hex("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100");
}

std::shared_ptr<NetContext> make_context(std::string role, int index, NetOptions options,
                                         ClusterSecret secret, LogCapture* log) {
  PeerIdentity self{std::move(role), index, ""};
  return NetContext::create(std::move(secret), std::move(self), std::move(options),
                            log ? log->sink() : LogSink([](std::string_view) {}));
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

RawClient::RawClient(const std::string& address, const NetContext& context) {
  HostPort target = parse_host_port(address, "127.0.0.1");
  socket_ = connect_to(target, std::chrono::milliseconds(2000));
  handshake_ = client_handshake(socket_.fd(), context, frame_protection(context.options()),
                                target.to_string());
  if (encrypts(handshake_.keys.mac)) {
    send_cipher_ = std::make_unique<FrameCipher>(FrameCipher::Direction::seal, handshake_.keys.send);
    receive_cipher_ =
        std::make_unique<FrameCipher>(FrameCipher::Direction::open, handshake_.keys.receive);
  } else {
    send_mac_ = std::make_unique<FrameMac>(handshake_.keys.mac, handshake_.keys.send);
    receive_mac_ = std::make_unique<FrameMac>(handshake_.keys.mac, handshake_.keys.receive);
  }
}

std::vector<std::byte> RawClient::seal(const OutgoingFrame& frame) {
  return seal_with_sequence(frame, ++send_sequence_);
}

std::vector<std::byte> RawClient::seal_with_sequence(const OutgoingFrame& frame,
                                                     std::uint64_t sequence) {
  if (send_cipher_) return encrypted_frame_bytes(frame, sequence, *send_cipher_);
  return seal_frame(frame, sequence, send_mac_.get()).to_bytes();
}

std::vector<std::byte> RawClient::as_session_frame(std::vector<std::byte> clear) {
  if (!send_cipher_ || clear.size() < kHeaderBytes) return clear;
  clear[offsetof(FrameHeader, flags)] |= static_cast<std::byte>(kFlagEncrypted);
  FrameHeader h = decode_header_fields(std::span(clear).first<kHeaderBytes>());
  send_cipher_->begin(h.sequence, header_for_mac(h));
  auto payload = std::span(clear).subspan(kHeaderBytes);
  send_cipher_->encrypt(payload, payload);
  MacTag tag = send_cipher_->finish_seal();
  clear.insert(clear.end(), tag.begin(), tag.end());
  return clear;
}

void RawClient::send_bytes(std::span<const std::byte> bytes) {
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  write_all(socket_.fd(), std::span(&iov, 1), std::chrono::milliseconds(3000), "test server");
}

InboundFrame RawClient::read_frame(std::chrono::milliseconds timeout) {
  FrameReader reader(socket_.fd(), "test server", std::uint64_t{1} << 30);
  for (;;) {
    InboundFrame frame =
        receive_cipher_ ? reader.read_encrypted(*receive_cipher_, ++receive_sequence_, timeout)
                        : reader.read(receive_mac_.get(), ++receive_sequence_, timeout);
    if (frame.type() != MessageType::heartbeat) return frame;
  }
}

bool RawClient::closed_by_peer(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::byte sink[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    if (!wait_ready(socket_.fd(), POLLIN, std::chrono::milliseconds(50))) continue;
    ssize_t n = ::recv(socket_.fd(), sink, sizeof sink, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    // Heartbeats and other frames: keep draining until the close.
  }
  return false;
}

}  // namespace trib::net::testing
