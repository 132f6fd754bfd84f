// Mismatched calls across ranks: found before data moves, reported on every rank with both
// ranks' views; and group formation refusing ranks that disagree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trib/collectives/allgather.h"
#include "trib/collectives/allreduce.h"
#include "trib/collectives/barrier.h"
#include "trib/collectives/broadcast.h"
#include "collectives/wire.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives {
namespace {

using ::testing::HasSubstr;
using testing::ThreadGroup;
using testing::what;

TEST(BadInput, MismatchedAllreduceSizesNameBothShapesOnEveryRank) {
  for (auto algorithm : {AllreduceAlgorithm::ring, AllreduceAlgorithm::direct, AllreduceAlgorithm::automatic}) {
    ThreadGroup g(3);
    auto errors = g.run([&](int r, Group& group) {
      Tensor t = Tensor::zeros(DType::f32, Shape{r == 2 ? 1010 : 1009});
      allreduce(group, t, {.algorithm = algorithm});
    });
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(errors[static_cast<std::size_t>(r)]) << "rank " << r << " did not fail";
      EXPECT_THROW(std::rethrow_exception(errors[static_cast<std::size_t>(r)]), InvalidArgument);
      std::string m = what(errors[static_cast<std::size_t>(r)]);
      EXPECT_THAT(m, HasSubstr("allreduce: tensors differ")) << m;
      EXPECT_THAT(m, HasSubstr("f32[1010]")) << m;
      EXPECT_THAT(m, HasSubstr("f32[1009]")) << m;
    }
    // The group stays failed: the next call fails at once, with the same reason.
    Tensor t = Tensor::zeros(DType::f32, Shape{4});
    EXPECT_THROW(allreduce(g[0], t), InvalidArgument);
  }
}

TEST(BadInput, MismatchedDtypesAreReported) {
  ThreadGroup g(2);
  auto errors = g.run([&](int r, Group& group) {
    allreduce(group, Tensor::zeros(r == 0 ? DType::f32 : DType::i32, Shape{8}));
  });
  for (auto& e : errors) {
    EXPECT_THAT(what(e), HasSubstr("rank 1 has i32[8]")) << what(e);
    EXPECT_THAT(what(e), HasSubstr("rank 0 has f32[8]")) << what(e);
  }
}

TEST(BadInput, DifferentOperationsOrOptionsAreReported) {
  {
    ThreadGroup g(2);
    auto errors = g.run([&](int r, Group& group) {
      Tensor t = Tensor::zeros(DType::f32, Shape{8});
      if (r == 0) allreduce(group, t); else broadcast(group, t);
    });
    for (auto& e : errors) {
      EXPECT_THAT(what(e), HasSubstr("rank 1 called broadcast")) << what(e);
      EXPECT_THAT(what(e), HasSubstr("rank 0 called allreduce")) << what(e);
    }
  }
  {
    ThreadGroup g(2);
    auto errors = g.run([&](int r, Group& group) {
      allreduce(group, Tensor::zeros(DType::f32, Shape{8}), {.average = r == 1});
    });
    for (auto& e : errors) EXPECT_THAT(what(e), HasSubstr("options differ")) << what(e);
  }
  {
    ThreadGroup g(3);
    auto errors = g.run([&](int r, Group& group) { broadcast(group, Tensor::zeros(DType::f32, Shape{8}), {.root = r == 1}); });
    for (auto& e : errors) EXPECT_THAT(what(e), HasSubstr("root")) << what(e);
  }
}

TEST(BadInput, AllgatherRowsMayDifferOnlyWhenAllowed) {
  ThreadGroup g(2);
  auto errors = g.run([&](int r, Group& group) { allgather(group, Tensor::zeros(DType::f32, Shape{r + 1, 4})); });
  for (auto& e : errors) EXPECT_THAT(what(e), HasSubstr("f32[2, 4]")) << what(e);
  ThreadGroup h(2);
  errors = h.run([&](int r, Group& group) {
    allgather(group, Tensor::zeros(DType::f32, Shape{3, r + 4}), {.same_shape = false});
  });
  for (auto& e : errors) EXPECT_THAT(what(e), HasSubstr("only the first dimension may differ")) << what(e);
}

TEST(BadInput, LocalArgumentErrorsDoNotBreakTheGroup) {
  ThreadGroup g(2);
  auto errors = g.run([&](int, Group& group) {
    EXPECT_THROW(allreduce(group, Tensor::zeros(DType::i32, Shape{4}), {.average = true}), InvalidArgument);
    EXPECT_THROW(allreduce(group, Tensor()), InvalidArgument);
    EXPECT_THROW(broadcast(group, Tensor::zeros(DType::f32, Shape{4}), {.root = 5}), InvalidArgument);
    Tensor t = Tensor::full(Shape{4}, 1.0f);
    allreduce(group, t);
    EXPECT_EQ(t.data<float>()[3], 2.0f);
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what(e);
}

TEST(BadInput, FormationRefusesADifferentGenerationOrSize) {
  for (bool size_differs : {false, true}) {
    auto hub = std::make_shared<net::InProcHub>();
    auto t0 = testing::inproc_transport(hub, 0), t1 = testing::inproc_transport(hub, 1);
    Endpoint e0 = Endpoint::listen(t0, "coll:0"), e1 = Endpoint::listen(t1, "coll:0");
    std::vector<std::string> addresses{e0.address(), e1.address()};
    auto form0 = std::async(std::launch::async, [&] {
      return Group::form(std::move(e0), {.rank = 0, .size = 2, .addresses = addresses,
                                         .form_timeout = std::chrono::milliseconds(500)});
    });
    GroupOptions o1{.rank = 1, .size = 2, .addresses = addresses, .generation = size_differs ? 0u : 7u,
                    .form_timeout = std::chrono::milliseconds(500)};
    if (size_differs) {
      o1.size = 3;
      o1.addresses.push_back("coll:9");
    }
    try {
      Group::form(std::move(e1), o1);
      ADD_FAILURE() << "rank 1 formed a group that disagrees with rank 0";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr(size_differs ? "a group of 3 ranks but rank 0 a group of 2"
                                                   : "generation 7 but rank 0 of generation 0"));
    }
    EXPECT_THROW(form0.get(), Timeout);  // rank 1 never joined
  }
}

TEST(BadInput, FormationTimesOutNamingTheMissingRanks) {
  auto hub = std::make_shared<net::InProcHub>();
  Endpoint e0 = Endpoint::listen(testing::inproc_transport(hub, 0), "coll:0");
  std::vector<std::string> addresses{e0.address(), "coll:77", "coll:78"};
  try {
    Group::form(std::move(e0), {.rank = 0, .size = 3, .addresses = addresses, .form_timeout = std::chrono::milliseconds(200)});
    ADD_FAILURE();
  } catch (const Timeout& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank(s) 1, 2 did not connect to rank 0 within 200 ms"));
  }
  EXPECT_THROW(Group::form(testing::inproc_transport(hub, 1), {.rank = 1, .size = 2, .addresses = {"coll:5", "coll:0"},
                                                               .form_timeout = std::chrono::milliseconds(200)}),
               Timeout);
}

}  // namespace
}  // namespace trib::collectives

namespace trib::collectives {
namespace {

// Issue 13: a collective request is bounded by what one can legitimately carry (no tensor;
// the fixed fields, dimensions and an abort's text). A bigger one, from an authenticated
// peer, closes its connection from the frame header; the endpoint goes on serving.
TEST(BadInput, AnOversizedCollectiveRequestIsRefusedBeforeItIsRead) {
  auto hub = std::make_shared<net::InProcHub>();
  Endpoint endpoint = Endpoint::listen(testing::inproc_transport(hub, 0), "coll:0");
  auto attacker = testing::inproc_transport(hub, 1);
  auto conn = attacker->connect(endpoint.address());
  Tensor big = Tensor::zeros(DType::f32, Shape{1 << 20});  // 4 MiB where at most ~5 KiB is legitimate
  EXPECT_THROW(conn->call(net::Message{detail::kCollectiveMethod, "", big}), Unavailable);
  for (int i = 0; i < 300 && conn->is_open(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(conn->is_open()) << "the oversized request closed its connection";
  EXPECT_LT(detail::max_request_bytes(), 8192u);
  // A request of legitimate size still reaches the endpoint (refused there as malformed, not dropped).
  auto again = attacker->connect(endpoint.address());
  EXPECT_THROW(again->call(net::Message{detail::kCollectiveMethod, "garbage", {}}), InvalidArgument);
}

TEST(BadInput, ACollectiveRequestsTextIsBoundedBothWays) {
  detail::Request r;
  r.family = detail::Family::abort;
  r.text = std::string(10000, 'x');
  const std::string body = detail::encode(r);
  EXPECT_EQ(detail::decode(body).text.size(), detail::kMaxTextBytes) << "encode cuts a long reason";
  EXPECT_THROW(detail::decode(body + "y"), InvalidArgument);
  EXPECT_LE(body.size() + 64, detail::max_request_bytes());
}

}  // namespace
}  // namespace trib::collectives
