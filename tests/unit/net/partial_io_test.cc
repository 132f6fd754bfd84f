// Frames survive being cut into arbitrary pieces: sendmsg writing a little at a time into
// tiny socket buffers, and a writer that sends a frame one byte per send().
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "net/frame_reader.h"
#include "net/frame_writer.h"
#include "net/socket_io.h"
#include "net_test_support.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

using namespace std::chrono_literals;

std::pair<Socket, Socket> tiny_socketpair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  for (int fd : fds) {
    int tiny = 2048;  // the kernel rounds this up a little; still thousands of pieces per MiB
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &tiny, sizeof tiny);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof tiny);
    set_nonblocking(fd);
  }
  return {Socket(fds[0]), Socket(fds[1])};
}

SessionKey key() {
  SessionKey k{};
  k[0] = std::byte{42};
  return k;
}

TEST(PartialIo, TensorFrameCrossesTinySocketBuffersIntact) {
  auto [a, b] = tiny_socketpair();
  Tensor sent = Tensor::empty(DType::i32, Shape{256, 1024});
  auto values = sent.span<std::int32_t>();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>(i * 7);
  std::string body = "grad/layer3";

  std::thread writer([&, fd = a.fd()] {
    FrameMac mac(MacAlgorithm::poly1305, key());
    for (std::uint64_t seq = 1; seq <= 3; ++seq) {
      OutgoingFrame f{MessageType::request, 5, seq * 10, std::as_bytes(std::span(body)), &sent};
      write_frame(fd, f, seq, &mac, 5000ms, "reader");
    }
  });
  FrameMac mac(MacAlgorithm::poly1305, key());
  FrameReader reader(b.fd(), "writer", std::uint64_t{1} << 30);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    InboundFrame got = reader.read(&mac, seq, 5000ms);
    EXPECT_EQ(got.header.tag, seq * 10);
    EXPECT_EQ(got.body, body);
    ASSERT_EQ(got.tensor.shape(), sent.shape());
    EXPECT_EQ(std::memcmp(got.tensor.raw_data(), sent.raw_data(), sent.nbytes()), 0);
  }
  writer.join();
}

TEST(PartialIo, ServerHandlesARequestSentOneByteAtATime) {
  auto server_ctx = testing::make_context("ps", 0);
  TcpTransport server(server_ctx);
  auto listener = server.listen("127.0.0.1:0", {[](Message m, const PeerIdentity&) {
    m.body = "got " + m.body;
    return m;
  }});
  auto client_ctx = testing::make_context("worker", 1);
  testing::RawClient raw(listener->address(), *client_ctx);

  Tensor t = Tensor::from_vector<float>(Shape{3}, {1.5f, 2.5f, 3.5f});
  std::string body = "trickle";
  auto bytes = raw.seal(OutgoingFrame{MessageType::request, 1, 99, std::as_bytes(std::span(body)), &t});
  for (std::byte b : bytes) {
    raw.send_bytes(std::span(&b, 1));
    std::this_thread::yield();
  }
  InboundFrame reply = raw.read_frame();
  EXPECT_EQ(reply.type(), MessageType::response);
  EXPECT_EQ(reply.header.tag, 99u);
  EXPECT_EQ(reply.body, "got trickle");
  EXPECT_EQ(reply.tensor.to_vector<float>(), t.to_vector<float>());
}

void ignore_signal(int) {}

// Signals without SA_RESTART make blocking calls fail with EINTR mid-transfer; every
// poll, sendmsg and recv loop must resume where it was.
TEST(PartialIo, TransfersSurviveSignalsInterruptingSystemCalls) {
  struct sigaction action {}, previous{};
  action.sa_handler = ignore_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &previous), 0);

  auto server_ctx = testing::make_context("ps", 0);
  TcpTransport server(server_ctx);
  auto listener = server.listen("", {[](Message m, const PeerIdentity&) { return m; }});
  auto client_ctx = testing::make_context("worker", 1);
  TcpTransport client(client_ctx);
  auto conn = client.connect(listener->address());

  std::atomic<bool> done{false};
  std::thread interrupter([&] {
    while (!done) {
      ::kill(::getpid(), SIGUSR1);
      std::this_thread::sleep_for(50us);
    }
  });
  Tensor t = Tensor::empty(DType::i32, Shape{8 << 20});  // 32 MiB
  auto v = t.span<std::int32_t>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i);
  for (int round = 0; round < 3; ++round) {
    Message reply = conn->call(Message{1, "", t});
    ASSERT_EQ(std::memcmp(reply.tensor.raw_data(), t.raw_data(), t.nbytes()), 0);
  }
  done = true;
  interrupter.join();
  ::sigaction(SIGUSR1, &previous, nullptr);
}

}  // namespace
}  // namespace trib::net
