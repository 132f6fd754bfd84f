// Dead, killed and silent peers are detected within the peer timeout and reported with
// the peer's identity; live but idle peers are kept alive by heartbeats.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "net/tcp_address.h"
#include "net_test_support.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class TcpLivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ctx_ = testing::make_context("ps", 0, testing::fast_options(), testing::test_secret(),
                                        &log_);
    server_ = std::make_unique<TcpTransport>(server_ctx_);
    listener_ = server_->listen("", {[](Message m, const PeerIdentity&) { return m; }});
    client_ctx_ = testing::make_context("worker", 5);
  }
  // Half of a large request: the header promises bytes that never come.
  std::vector<std::byte> half_frame(testing::RawClient& raw) {
    Tensor t = Tensor::zeros(DType::f32, Shape{4096});
    auto frame = raw.seal(OutgoingFrame{MessageType::request, 1, 1, {}, &t});
    frame.resize(frame.size() / 2);
    return frame;
  }

  testing::LogCapture log_;
  std::shared_ptr<NetContext> server_ctx_, client_ctx_;
  std::unique_ptr<TcpTransport> server_;
  std::unique_ptr<Listener> listener_;
};

TEST_F(TcpLivenessTest, IdleConnectionIsKeptAliveByHeartbeats) {
  TcpTransport client(client_ctx_);
  auto conn = client.connect(listener_->address());
  std::this_thread::sleep_for(2500ms);  // 2.5 peer timeouts without a request
  EXPECT_TRUE(conn->is_open());
  EXPECT_EQ(conn->call(Message{1, "awake", {}}).body, "awake");
  EXPECT_EQ(server_ctx_->stats().snapshot().peer_timeouts, 0u);
  EXPECT_EQ(client_ctx_->stats().snapshot().peer_timeouts, 0u);
  EXPECT_GE(client_ctx_->stats().snapshot().frames_sent, 10u);  // heartbeats
}

TEST_F(TcpLivenessTest, PeerStallingMidFrameIsDroppedWithinTheTimeout) {
  testing::RawClient raw(listener_->address(), *client_ctx_);
  raw.send_bytes(half_frame(raw));
  auto start = Clock::now();
  EXPECT_TRUE(raw.closed_by_peer(3000ms));
  auto took = Clock::now() - start;
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 2000ms);
  EXPECT_EQ(server_ctx_->stats().snapshot().peer_timeouts, 1u);
  EXPECT_TRUE(log_.wait_for({"worker 5 at 127.0.0.1", "stalled after"}));
}

TEST_F(TcpLivenessTest, PeerProcessKilledMidMessageIsDetectedAtOnce) {
  testing::RawClient raw(listener_->address(), *client_ctx_);
  auto half = half_frame(raw);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe calls in the child of a threaded process.
    (void)!::write(raw.fd(), half.data(), half.size());
    ::kill(::getpid(), SIGKILL);
    ::_exit(1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  auto start = Clock::now();
  ::shutdown(raw.fd(), SHUT_WR);  // the parent's copy of the socket must not keep it alive
  EXPECT_TRUE(log_.wait_for({"worker 5 at 127.0.0.1", "closed the connection after"}, 2000ms));
  EXPECT_LT(Clock::now() - start, 1000ms);
}

TEST_F(TcpLivenessTest, SilentServerFailsPendingRequestsNamingIt) {
  // A server that authenticates, then never sends another byte (a SIGSTOPped process).
  auto silent_ctx = testing::make_context("ps", 1);
  HostPort bound;
  Socket listening = listen_on(parse_host_port("127.0.0.1:0", ""), bound);
  Socket accepted;
  std::thread silent([&] {
    ASSERT_TRUE(wait_ready(listening.fd(), POLLIN, 3000ms));
    accepted = Socket(::accept4(listening.fd(), nullptr, nullptr, SOCK_NONBLOCK));
    server_handshake(accepted.fd(), *silent_ctx, "client");
  });
  std::string closed_peer;
  std::mutex mu;
  Handlers handlers;
  handlers.on_close = [&](const PeerIdentity& peer, std::string_view) {
    std::lock_guard lock(mu);
    closed_peer = peer.to_string();
  };
  TcpTransport client(client_ctx_);
  auto conn = client.connect(bound.to_string(), handlers);
  silent.join();
  auto start = Clock::now();
  auto pending = conn->request(Message{1, "anyone?", {}});
  try {
    pending.get();
    FAIL();
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("ps 1 at " + bound.to_string()), std::string::npos)
        << e.what();
  }
  EXPECT_LT(Clock::now() - start, 2000ms);
  EXPECT_EQ(client_ctx_->stats().snapshot().peer_timeouts, 1u);
  EXPECT_TRUE(testing::eventually([&] {
    std::lock_guard lock(mu);
    return closed_peer == "ps 1 at " + bound.to_string();
  }));
}

}  // namespace
}  // namespace trib::net
