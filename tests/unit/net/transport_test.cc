// Request/response behaviour that every Transport must share, run over TCP and in-process.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <mutex>
#include <thread>

#include "net_test_support.h"
#include "trib/net/inproc_transport.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

using namespace std::chrono_literals;
using testing::LogCapture;

struct Tcp {
  static std::unique_ptr<Transport> make(std::shared_ptr<NetContext> ctx,
                                         std::shared_ptr<InProcHub>) {
    return std::make_unique<TcpTransport>(std::move(ctx));
  }
  static constexpr const char* kListenAddress = "127.0.0.1:0";
};

struct InProc {
  static std::unique_ptr<Transport> make(std::shared_ptr<NetContext> ctx,
                                         std::shared_ptr<InProcHub> hub) {
    return std::make_unique<InProcTransport>(std::move(ctx), std::move(hub));
  }
  static constexpr const char* kListenAddress = "ps:0";
};

template <typename Kind>
class TransportTest : public ::testing::Test {
 protected:
  std::shared_ptr<NetContext> context(std::string role, int index,
                                      ClusterSecret secret = testing::test_secret(),
                                      NetOptions options = testing::fast_options(),
                                      LogCapture* log = nullptr) {
    return testing::make_context(std::move(role), index, options, std::move(secret), log);
  }
  std::unique_ptr<Transport> transport(std::shared_ptr<NetContext> ctx) {
    return Kind::make(std::move(ctx), hub_);
  }
  // A "ps 0" server with the given handlers.
  std::unique_ptr<Listener> serve(Handlers handlers) {
    server_ = transport(context("ps", 0, testing::test_secret(), testing::fast_options(),
                                &server_log_));
    return server_->listen(Kind::kListenAddress, std::move(handlers));
  }
  std::shared_ptr<Connection> connect(const Listener& listener, Handlers handlers = {},
                                      NetOptions options = testing::fast_options()) {
    client_ = transport(context("worker", 3, testing::test_secret(), options));
    return client_->connect(listener.address(), std::move(handlers));
  }

  std::shared_ptr<InProcHub> hub_ = std::make_shared<InProcHub>();
  LogCapture server_log_;
  std::unique_ptr<Transport> server_;
  std::unique_ptr<Transport> client_;
};

struct Names {
  template <typename T> static std::string GetName(int) {
    return std::is_same_v<T, Tcp> ? "Tcp" : "InProc";
  }
};
using Kinds = ::testing::Types<Tcp, InProc>;
TYPED_TEST_SUITE(TransportTest, Kinds, Names);

Message echo_plus_one(Message m, const PeerIdentity&) {
  m.method += 1;
  return m;
}

TYPED_TEST(TransportTest, RequestGetsTheReplyWithBodyTensorAndPeerNames) {
  std::string seen_from;
  auto listener = this->serve({[&](Message m, const PeerIdentity& from) {
    seen_from = from.to_string();
    return echo_plus_one(std::move(m), from);
  }});
  auto conn = this->connect(*listener);
  EXPECT_EQ(conn->peer().to_string().rfind("ps 0 at ", 0), 0u) << conn->peer().to_string();

  Tensor t = Tensor::from_vector<std::int64_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Message reply = conn->call(Message{41, "params/w", t});
  EXPECT_EQ(reply.method, 42u);
  EXPECT_EQ(reply.body, "params/w");
  ASSERT_TRUE(reply.tensor.defined());
  EXPECT_EQ(reply.tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(reply.tensor.to_vector<std::int64_t>(), t.to_vector<std::int64_t>());
  EXPECT_FALSE(reply.tensor.shares_storage(t));
  EXPECT_EQ(seen_from.rfind("worker 3 at ", 0), 0u) << seen_from;
}

// A parameter-server worker sends a step's pull right behind its push without waiting for
// the push's reply (strategy.ps_overlap): the handler must take one connection's requests
// one at a time, in the order they were sent, so that the pull sees the push applied.
TYPED_TEST(TransportTest, OneConnectionsRequestsAreHandledOneAtATimeInOrder) {
  std::mutex mu;
  std::vector<std::uint32_t> order;
  int running = 0, most = 0;
  auto listener = this->serve({[&](Message m, const PeerIdentity&) {
    {
      std::lock_guard lock(mu);
      most = std::max(most, ++running);
      order.push_back(m.method);
    }
    std::this_thread::yield();  // room for a second handler, if the transport ran one
    std::lock_guard lock(mu);
    --running;
    return m;
  }});
  auto conn = this->connect(*listener);
  std::vector<std::future<Message>> replies;
  for (std::uint32_t i = 0; i < 200; ++i)  // large and small, as pushes and pulls alternate
    replies.push_back(conn->request(Message{i, "", Tensor::full(Shape{i % 2 == 0 ? 65536 : 1}, 1.0f)}));
  for (auto& r : replies) r.get();
  ASSERT_EQ(order.size(), 200u);
  for (std::uint32_t i = 0; i < 200; ++i) ASSERT_EQ(order[i], i);
  EXPECT_EQ(most, 1);
}

TYPED_TEST(TransportTest, ThousandTagsInFlightOnOneConnection) {
  auto listener = this->serve({[](Message m, const PeerIdentity&) {
    m.body += "!";
    return m;
  }});
  auto conn = this->connect(*listener);
  std::vector<std::future<Message>> replies;
  for (int i = 0; i < 1000; ++i) {
    Tensor t = Tensor::full(Shape{4}, static_cast<float>(i));
    replies.push_back(conn->request(Message{static_cast<std::uint32_t>(i), std::to_string(i), t}));
  }
  for (int i = 0; i < 1000; ++i) {
    Message r = replies[static_cast<std::size_t>(i)].get();
    ASSERT_EQ(r.body, std::to_string(i) + "!");
    ASSERT_EQ(r.method, static_cast<std::uint32_t>(i));
    ASSERT_EQ(r.tensor.span<float>()[3], static_cast<float>(i));
  }
}

TYPED_TEST(TransportTest, HandlerErrorsArriveAsTheSameErrorClass) {
  auto listener = this->serve({[](Message m, const PeerIdentity&) -> Message {
    if (m.method == 1) throw NotFound("no parameter named 'w9'");
    throw ShapeError("expected [3], got [4]");
  }});
  auto conn = this->connect(*listener);
  try {
    conn->call(Message{1, "", {}});
    FAIL();
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("no parameter named 'w9'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ps 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(conn->call(Message{2, "", {}}), ShapeError);
  EXPECT_TRUE(conn->is_open());
}

TYPED_TEST(TransportTest, RequestFailsWithTimeoutAtItsDeadline) {
  auto listener = this->serve({[](Message m, const PeerIdentity&) {
    if (m.method == 1) std::this_thread::sleep_for(300ms);
    return m;
  }});
  auto conn = this->connect(*listener);
  auto start = std::chrono::steady_clock::now();
  RequestOptions opts;
  opts.timeout = 100ms;
  auto slow = conn->request(Message{1, "", {}}, opts);
  EXPECT_THROW(slow.get(), Timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
  EXPECT_EQ(this->client_->context()->stats().snapshot().requests_timed_out, 1u);
  // The late reply is dropped; the connection keeps working.
  EXPECT_EQ(conn->call(Message{2, "after", {}}).body, "after");
}

TYPED_TEST(TransportTest, WrongSecretIsRejectedAndCountedOnBothSides) {
  auto listener = this->serve({echo_plus_one});
  auto intruder_ctx = this->context("worker", 9, testing::other_secret());
  auto intruder = this->transport(intruder_ctx);
  EXPECT_THROW(intruder->connect(listener->address()), Unauthenticated);
  EXPECT_GE(intruder_ctx->stats().snapshot().auth_failures, 1u);
  EXPECT_TRUE(testing::eventually(
      [&] { return this->server_->context()->stats().snapshot().auth_failures >= 1; }));
  EXPECT_TRUE(this->server_log_.wait_for({"rejected connection", "cluster secret"}));
  // Honest clients are still served.
  auto conn = this->connect(*listener);
  EXPECT_EQ(conn->call(Message{1, "ok", {}}).method, 2u);
}

TYPED_TEST(TransportTest, PeerCloseFailsPendingRequestsAndCallsTheCloseHandler) {
  std::latch entered(1);
  auto listener = this->serve({[&](Message m, const PeerIdentity&) {
    entered.count_down();
    std::this_thread::sleep_for(300ms);
    return m;
  }});
  std::mutex mu;
  std::string closed_peer;
  Handlers client_handlers;
  client_handlers.on_close = [&](const PeerIdentity& peer, std::string_view) {
    std::lock_guard lock(mu);
    closed_peer = peer.to_string();
  };
  auto conn = this->connect(*listener, client_handlers);
  auto pending = conn->request(Message{1, "", {}});
  entered.wait();
  listener.reset();  // the server goes away mid-request
  try {
    pending.get();
    FAIL();
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("ps 0"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(testing::eventually([&] {
    std::lock_guard lock(mu);
    return closed_peer.rfind("ps 0 at", 0) == 0;
  }));
  EXPECT_FALSE(conn->is_open());
  EXPECT_THROW(conn->request(Message{}), Unavailable);
}

TYPED_TEST(TransportTest, NotifyReachesTheHandlerWithoutAReply) {
  std::atomic<int> got{0};
  auto listener = this->serve({[&](Message m, const PeerIdentity&) {
    got += static_cast<int>(m.method);
    return Message{};
  }});
  auto conn = this->connect(*listener);
  conn->notify(Message{5, "", {}});
  conn->notify(Message{7, "", {}});
  EXPECT_TRUE(testing::eventually([&] { return got.load() == 12; }));
}

// A peer's last notifications, then its goodbye: the handler gets every one of them, and the
// close handler only after them (a pipeline stage's last gradients, then its exit). The slow
// handler keeps them queued when the goodbye is read.
TYPED_TEST(TransportTest, NotificationsSentBeforeAPeersCloseAreHandledBeforeItsCloseHandler) {
  std::mutex mu;
  std::vector<std::string> events;
  Handlers server_handlers;
  server_handlers.on_request = [&](Message m, const PeerIdentity&) {
    std::this_thread::sleep_for(30ms);
    std::lock_guard lock(mu);
    events.push_back(std::to_string(m.method));
    return Message{};
  };
  server_handlers.on_close = [&](const PeerIdentity&, std::string_view) {
    std::lock_guard lock(mu);
    events.push_back("closed");
  };
  auto listener = this->serve(server_handlers);
  auto conn = this->connect(*listener);
  for (std::uint32_t m = 1; m <= 5; ++m) conn->notify(Message{m, "", {}});
  conn->close();
  ASSERT_TRUE(testing::eventually([&] {
    std::lock_guard lock(mu);
    return events.size() == 6;
  })) << fmt::format("{}", fmt::join(events, " "));
  std::lock_guard lock(mu);
  EXPECT_EQ(events, (std::vector<std::string>{"1", "2", "3", "4", "5", "closed"}));
}

TYPED_TEST(TransportTest, ReplyIsReceivedIntoTheCallersTensor) {
  auto listener = this->serve({[](Message m, const PeerIdentity&) {
    return Message{0, "", Tensor::full(Shape{2, 8}, static_cast<float>(m.method))};
  }});
  auto conn = this->connect(*listener);
  Tensor into = Tensor::zeros(DType::f32, Shape{16});
  RequestOptions opts;
  opts.reply_into = into;
  Message reply = conn->call(Message{3, "", {}}, opts);
  EXPECT_TRUE(reply.tensor.shares_storage(into));
  EXPECT_EQ(reply.tensor.shape(), (Shape{2, 8}));
  EXPECT_EQ(into.span<float>()[15], 3.0f);

  RequestOptions wrong;
  wrong.reply_into = Tensor::zeros(DType::f32, Shape{15});
  EXPECT_THROW(conn->call(Message{3, "", {}}, wrong), InvalidArgument);
}

TYPED_TEST(TransportTest, OversizedMessageIsRefusedBeforeSending) {
  auto listener = this->serve({echo_plus_one});
  NetOptions small = testing::fast_options();
  small.max_frame_bytes = 4096;
  auto conn = this->connect(*listener, {}, small);
  EXPECT_THROW(conn->request(Message{0, std::string(4097, 'x'), {}}), InvalidArgument);
  EXPECT_THROW(conn->notify(Message{0, "", Tensor::zeros(DType::f32, Shape{1024})}),
               InvalidArgument);
  EXPECT_TRUE(conn->is_open());
}

TYPED_TEST(TransportTest, ServerCanSendRequestsToItsClients) {
  auto listener = this->serve({echo_plus_one});
  Handlers client_handlers;
  client_handlers.on_request = [](Message m, const PeerIdentity& from) {
    m.body = "worker answers " + from.role;
    return m;
  };
  auto conn = this->connect(*listener, client_handlers);
  ASSERT_TRUE(testing::eventually([&] { return listener->connections().size() == 1; }));
  auto to_client = listener->connections().front();
  EXPECT_EQ(to_client->peer().role, "worker");
  EXPECT_EQ(to_client->peer().index, 3);
  EXPECT_EQ(to_client->call(Message{}).body, "worker answers ps");
}

TYPED_TEST(TransportTest, LocalCloseFailsPendingAndRefusesNewRequests) {
  auto listener = this->serve({[](Message m, const PeerIdentity&) {
    std::this_thread::sleep_for(200ms);
    return m;
  }});
  auto conn = this->connect(*listener);
  auto pending = conn->request(Message{});
  conn->close();
  EXPECT_THROW(pending.get(), Unavailable);
  EXPECT_THROW(conn->request(Message{}), Unavailable);
  EXPECT_NE(conn->close_reason().find("closed locally"), std::string::npos);
}

}  // namespace
}  // namespace trib::net

namespace trib::net {
namespace {

TYPED_TEST(TransportTest, RequestOverItsMethodsLimitClosesTheConnectionBeforeItIsRead) {
  std::atomic<int> served{0};
  Handlers h{[&](Message m, const PeerIdentity&) {
    ++served;
    return m;
  }};
  h.request_limit = [](std::uint32_t method) -> std::uint64_t { return method == 7 ? 1000 : 1 << 20; };
  auto listener = this->serve(std::move(h));
  auto conn = this->connect(*listener);
  EXPECT_EQ(conn->call(Message{8, std::string(5000, 'x'), {}}).body.size(), 5000u);  // no limit
  EXPECT_EQ(conn->call(Message{7, std::string(900, 'x'), {}}).body.size(), 900u);     // under
  Tensor big = Tensor::zeros(DType::f32, Shape{1000});                                  // 4000 bytes
  EXPECT_THROW(conn->call(Message{7, "", big}), Unavailable);
  EXPECT_TRUE(testing::eventually([&] { return !conn->is_open(); }));
  EXPECT_EQ(served.load(), 2);
  EXPECT_TRUE(this->server_log_.wait_for({"worker 3", "limit is 1000"}) ||
              this->server_log_.wait_for({"worker 3", "at most 1000"}));
}

}  // namespace
}  // namespace trib::net
