// Before authentication a peer is anyone: its connections are limited per source address,
// its handshake must finish quickly, and what it makes us log is escaped and rate-limited.
#include <gtest/gtest.h>

#include <openssl/rand.h>

#include "net/tcp_address.h"
#include "net_test_support.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

using namespace std::chrono_literals;

class TcpPreauthTest : public ::testing::Test {
 protected:
  void start(NetOptions o) {
    ctx_ = testing::make_context("ps", 0, o, testing::test_secret(), &log_);
    server_ = std::make_unique<TcpTransport>(ctx_);
    listener_ = server_->listen("", {[](Message m, const PeerIdentity&) { return m; }});
  }
  Socket raw_connection() {
    return connect_to(parse_host_port(listener_->address(), ""), 1000ms);
  }
  // A hello as a client writes it: protection, nonce, role, index.
  static std::vector<std::byte> hello(const std::string& role) {
    std::vector<std::byte> body{static_cast<std::byte>(MacAlgorithm::aes256_gcm)};
    body.resize(1 + 32);
    body.push_back(static_cast<std::byte>(role.size()));
    for (char c : role) body.push_back(static_cast<std::byte>(c));
    body.resize(body.size() + 4);
    return seal_frame(OutgoingFrame{MessageType::hello, 0, 0, body, nullptr}, 0, nullptr)
        .to_bytes();
  }
  static void send(const Socket& s, std::vector<std::byte> bytes) {
    iovec iov{bytes.data(), bytes.size()};
    write_all(s.fd(), std::span(&iov, 1), 1000ms, "server");
  }
  // A connection that sent its hello, got the challenge, and then stalls.
  Socket stalled_handshake() {
    Socket s = raw_connection();
    send(s, hello("worker"));
    HeaderBytes challenge;
    read_exact(s.fd(), challenge, 3000ms, "server");  // the server has read the hello
    return s;
  }

  testing::LogCapture log_;
  std::shared_ptr<NetContext> ctx_;
  std::unique_ptr<TcpTransport> server_;
  std::unique_ptr<Listener> listener_;
};

TEST_F(TcpPreauthTest, StalledHandshakesFillTheSlotsAndAClientRetriesUntilOneFrees) {
  NetOptions o = testing::fast_options();
  o.max_pending_per_source = 4;
  o.handshake_timeout = 1000ms;
  start(o);
  // Four connections that sent a hello and then stall: they are not idle, so none is
  // dropped for a newcomer, which is refused until their short deadline passes.
  std::vector<Socket> stalled;
  for (int i = 0; i < 4; ++i) stalled.push_back(stalled_handshake());
  NetOptions client_options = testing::fast_options();
  client_options.connect_retry = 5000ms;
  TcpTransport client(testing::make_context("worker", 1, client_options));
  EXPECT_EQ(client.connect(listener_->address())->call(Message{1, "in", {}}).body, "in");
  EXPECT_TRUE(log_.wait_for({"refused connection from 127.0.0.1", "handshakes already pending"}));
  // Without retries the same refusal is the caller's error.
  for (auto& s : stalled) s = stalled_handshake();
  TcpTransport once(testing::make_context("worker", 2));
  EXPECT_THROW(once.connect(listener_->address()), Error);
}

TEST_F(TcpPreauthTest, RoleFromAnUnauthenticatedHelloCannotForgeLogLines) {
  start(testing::fast_options());
  Socket s = raw_connection();
  send(s, hello("x\n[trib.net] worker 0 at 10.0.0.1:1 \x1b[2Kforged"));
  ASSERT_TRUE(log_.wait_for({"rejected connection from 127.0.0.1", "\\x0a[trib.net]"}));
  for (const std::string& line : log_.lines()) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
}

TEST_F(TcpPreauthTest, FloodOfRefusalsIsLoggedAsAFewLinesAndOneSummaryWithCounts) {
  NetOptions o = testing::fast_options();
  o.untrusted_log_interval = 300ms;
  o.max_pending_per_source = o.max_pending_handshakes;  // none dropped: only failures here
  start(o);
  for (int i = 0; i < 30; ++i) {
    Socket s = raw_connection();
    send(s, std::vector<std::byte>(kHeaderBytes, std::byte{0x41}));  // not a frame
  }
  // Every failure is either one of a few lines per interval or counted in a summary.
  std::size_t written = 0, held_back = 0, summaries = 0;
  EXPECT_TRUE(testing::eventually([&] {
    written = held_back = summaries = 0;
    for (const std::string& line : log_.lines()) {
      if (line.starts_with("rejected connection")) ++written;
      if (line.find("held back in the last") != std::string::npos) {
        ++summaries;
        EXPECT_NE(line.find("handshake(s) failed"), std::string::npos) << line;
        held_back += std::stoul(line);
      }
    }
    return written + held_back == 30;
  }, 5000ms)) << written << " written, " << held_back << " held back";
  EXPECT_GE(summaries, 1u);
  EXPECT_LE(written, 5 * (summaries + 1));
}

}  // namespace
}  // namespace trib::net
