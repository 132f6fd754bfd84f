// Authentication of every frame after the handshake: replayed, reordered, altered or
// unauthenticated frames close the connection, are counted, and leave the server serving.
#include <gtest/gtest.h>

#include "net/tcp_address.h"
#include "net_test_support.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

using namespace std::chrono_literals;
using testing::LogCapture;
using testing::RawClient;

// Every test runs twice: with encrypted frames (the default) and with MAC-only frames
// (security.encryption: false).
class TcpSecurityTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    NetOptions o = testing::fast_options();
    o.encryption = GetParam();
    server_ctx_ = testing::make_context("ps", 0, o, testing::test_secret(), &log_);
    server_ = std::make_unique<TcpTransport>(server_ctx_);
    listener_ = server_->listen("", {[](Message m, const PeerIdentity&) { return m; }});
    client_ctx_ = testing::make_context("worker", 2, o);
  }
  OutgoingFrame request(std::uint64_t tag) {
    return OutgoingFrame{MessageType::request, 1, tag, std::as_bytes(std::span(body_)), nullptr};
  }
  NetStatsSnapshot stats() const { return server_ctx_->stats().snapshot(); }
  // An honest client still gets answers: one bad connection never takes the server down.
  void expect_server_still_serves() {
    TcpTransport client(client_ctx_);
    auto conn = client.connect(listener_->address());
    EXPECT_EQ(conn->call(Message{1, "still here", {}}).body, "still here");
  }

  LogCapture log_;
  std::shared_ptr<NetContext> server_ctx_, client_ctx_;
  std::unique_ptr<TcpTransport> server_;
  std::unique_ptr<Listener> listener_;
  std::string body_ = "payload";
};

TEST_P(TcpSecurityTest, ListensOnLoopbackByDefault) {
  EXPECT_EQ(listener_->address().rfind("127.0.0.1:", 0), 0u) << listener_->address();
}

TEST_P(TcpSecurityTest, ReplayedFrameIsRejectedAndCounted) {
  RawClient raw(listener_->address(), *client_ctx_);
  auto frame = raw.seal(request(1));
  raw.send_bytes(frame);
  EXPECT_EQ(raw.read_frame().header.tag, 1u);
  raw.send_bytes(frame);  // byte-for-byte the same, valid MAC, old sequence number
  EXPECT_TRUE(raw.closed_by_peer());
  EXPECT_EQ(stats().sequence_failures, 1u);
  EXPECT_TRUE(log_.wait_for({"worker 2 at 127.0.0.1", "replayed or reordered"}));
  expect_server_still_serves();
}

TEST_P(TcpSecurityTest, ReorderedFramesAreRejected) {
  RawClient raw(listener_->address(), *client_ctx_);
  auto first = raw.seal(request(1));
  auto second = raw.seal(request(2));
  raw.send_bytes(second);
  EXPECT_TRUE(raw.closed_by_peer());
  EXPECT_EQ(stats().sequence_failures, 1u);
}

TEST_P(TcpSecurityTest, FrameWithOneFlippedByteIsRejectedAndCounted) {
  // Flip a byte in the payload, then in the header's tag: both break the MAC.
  for (std::size_t offset : {kHeaderBytes + 3, std::size_t{16}}) {
    RawClient raw(listener_->address(), *client_ctx_);
    auto frame = raw.seal(request(1));
    frame[offset] ^= std::byte{0x01};
    raw.send_bytes(frame);
    EXPECT_TRUE(raw.closed_by_peer()) << "offset " << offset;
  }
  EXPECT_EQ(stats().mac_failures, 2u);
  EXPECT_TRUE(log_.wait_for({"failed MAC verification", "worker 2"}));
  expect_server_still_serves();
}

TEST_P(TcpSecurityTest, FrameSealedWithTheWrongKeyIsRejected) {
  RawClient raw(listener_->address(), *client_ctx_);
  SessionKey forged{};
  if (GetParam()) {
    FrameCipher cipher(FrameCipher::Direction::seal, forged);
    raw.send_bytes(encrypted_frame_bytes(request(1), 1, cipher));
  } else {
    FrameMac mac(MacAlgorithm::gmac_aes256, forged);
    raw.send_bytes(seal_frame(request(1), 1, &mac).to_bytes());
  }
  EXPECT_TRUE(raw.closed_by_peer());
  EXPECT_EQ(stats().mac_failures, 1u);
}

TEST_P(TcpSecurityTest, FrameInTheOtherModeIsRejected) {
  // A clear frame on an encrypted session (or the reverse) is refused, never read as valid.
  RawClient raw(listener_->address(), *client_ctx_);
  SessionKey key = raw.handshake().keys.send;
  if (GetParam()) {
    FrameMac mac(MacAlgorithm::gmac_aes256, key);
    raw.send_bytes(seal_frame(request(1), 1, &mac).to_bytes());
  } else {
    FrameCipher cipher(FrameCipher::Direction::seal, key);
    raw.send_bytes(encrypted_frame_bytes(request(1), 1, cipher));
  }
  EXPECT_TRUE(raw.closed_by_peer());
  EXPECT_EQ(stats().malformed_frames, 1u);
  EXPECT_TRUE(log_.wait_for({"session", "worker 2"}));
}

TEST_P(TcpSecurityTest, PayloadIsNotReadableOnTheWireWhenEncrypted) {
  RawClient raw(listener_->address(), *client_ctx_);
  body_ = "a recognisable secret body, sasl.password=hunter2";
  auto frame = raw.seal(request(1));
  std::string wire(reinterpret_cast<const char*>(frame.data()), frame.size());
  EXPECT_EQ(wire.find("sasl.password") == std::string::npos, GetParam());
  raw.send_bytes(frame);
  EXPECT_EQ(raw.read_frame().body, body_);  // and it still arrives intact
}

TEST_P(TcpSecurityTest, SkippingTheHandshakeIsRejected) {
  Socket s = connect_to(parse_host_port(listener_->address(), ""), 1000ms);
  auto frame = seal_frame(request(1), 1, nullptr).to_bytes();
  iovec iov{frame.data(), frame.size()};
  write_all(s.fd(), std::span(&iov, 1), 1000ms, "server");
  EXPECT_TRUE(log_.wait_for({"rejected connection from 127.0.0.1", "expected hello"}));
  EXPECT_GE(stats().handshake_failures, 1u);
  expect_server_still_serves();
}

TEST_P(TcpSecurityTest, WrongSecretIsRejectedBeforeAnyRequestIsServed) {
  auto intruder_ctx = testing::make_context("worker", 7, testing::fast_options(),
                                            testing::other_secret());
  TcpTransport intruder(intruder_ctx);
  try {
    intruder.connect(listener_->address());
    FAIL();
  } catch (const Unauthenticated& e) {
    EXPECT_NE(std::string(e.what()).find(listener_->address()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(testing::eventually([&] { return stats().auth_failures == 1; }));
  EXPECT_EQ(stats().connections_opened, 0u);
  EXPECT_EQ(intruder_ctx->stats().snapshot().auth_failures, 1u);
  expect_server_still_serves();
}

TEST_P(TcpSecurityTest, EveryProtectionTheServerAllowsCanBeChosenPerConnection) {
  TcpTransport client(client_ctx_);
  std::vector<MacAlgorithm> allowed{MacAlgorithm::aes256_gcm};
  if (!GetParam()) {
    allowed.insert(allowed.end(), {MacAlgorithm::poly1305, MacAlgorithm::gmac_aes256,
                                   MacAlgorithm::hmac_sha256});
  }
  for (MacAlgorithm mac : allowed) {
    ConnectOptions options;
    options.mac = mac;
    auto conn = client.connect(listener_->address(), {}, options);
    Tensor t = Tensor::full(Shape{1000}, 2.0f);
    Message reply = conn->call(Message{1, "x", t});
    EXPECT_EQ(reply.tensor.span<float>()[999], 2.0f) << mac_algorithm_name(mac);
  }
}

TEST_P(TcpSecurityTest, ServerThatEncryptsRefusesAClientThatWouldNot) {
  if (!GetParam()) GTEST_SKIP() << "the MAC-only server accepts either";
  TcpTransport client(client_ctx_);
  ConnectOptions clear;
  clear.mac = MacAlgorithm::gmac_aes256;
  try {
    client.connect(listener_->address(), {}, clear);
    FAIL() << "a MAC-only client was accepted by a server that requires encryption";
  } catch (const Unauthenticated& e) {
    EXPECT_NE(std::string(e.what()).find("requires encrypted frames"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(stats().connections_opened, 0u);
  expect_server_still_serves();
}

INSTANTIATE_TEST_SUITE_P(Modes, TcpSecurityTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Encrypted" : "MacOnly";
                         });

}  // namespace
}  // namespace trib::net
