// A parameter server rolled back by the chief (an init or restore of a newer generation, after
// another server was lost): every worker's clock starts again from the restore's step, and a
// push or pull of an older generation is answered kFlagRolledBack and applies nothing, so no
// update from before the rollback lands after it. A relaunched server that holds no state yet
// answers pushes the same way.
#include <gtest/gtest.h>

#include "ps/stats_json.h"
#include "test_server.h"

namespace trib::ps {
namespace {

using testing::Request;
using Server = testing::TestServer;

net::Message push_of(int worker, std::int64_t step, std::int64_t generation, float value, std::int64_t elements) {
  Request r(proto::Type::push, worker, step);
  r.generation = generation;
  return r.message(Tensor::full(Shape{elements}, value));
}

proto::Header reply_header(const net::Message& m) { return proto::decode(m.body).header; }

net::Message init_at(std::int64_t step, std::int64_t generation, float value, std::int64_t elements) {
  Request r(proto::Type::init, 0, step);
  r.generation = generation;
  return r.message(Tensor::full(Shape{elements}, value));
}

TEST(PsServerRollback, PushesFromBeforeARollbackAreAnsweredRolledBackAndNotApplied) {
  Server s(Mode::async);
  s.send(push_of(1, 0, 0, 1.0f, s.elements));
  s.send(push_of(1, 1, 0, 1.0f, s.elements));
  EXPECT_FLOAT_EQ(*s.pull(0, -1), -2.0f);

  // The chief restores the job at step 10 in generation 7 (values 5).
  s.send(init_at(10, 7, 5.0f, s.elements));
  EXPECT_EQ(s.server.stats().rollbacks, 1u);

  // Worker 1 had not heard yet: its push of generation 0 applies nothing.
  net::Message late = s.send(push_of(1, 2, 0, 100.0f, s.elements));
  EXPECT_TRUE(reply_header(late).flags & proto::kFlagRolledBack);
  EXPECT_EQ(reply_header(late).generation, 7) << "the reply says which generation the job is in";
  Request old_pull(proto::Type::pull, 1, 3);
  net::Message pulled = s.send(old_pull);
  EXPECT_TRUE(reply_header(pulled).flags & proto::kFlagRolledBack);
  EXPECT_FALSE(pulled.tensor.defined()) << "no values for a request from before the rollback";
  EXPECT_EQ(s.server.stats().rolled_back_requests, 2u);

  // Once it rewinds (generation 7), its plain read resumes at the restore's step, with its values.
  Request read(proto::Type::pull, 1, -1);
  read.generation = 7;
  net::Message r = s.send(read);
  EXPECT_EQ(reply_header(r).step, 10);
  EXPECT_TRUE(proto::decode(r.body).text.empty()) << "no data cursor from before the rollback";
  EXPECT_FLOAT_EQ(r.tensor.data<float>()[0], 5.0f);
  s.send(push_of(1, 10, 7, 1.0f, s.elements));
  Request again(proto::Type::pull, 1, -1);
  again.generation = 7;
  EXPECT_FLOAT_EQ(s.send(again).tensor.data<float>()[0], 4.0f);
  EXPECT_NE(stats_to_json(s.server.stats()).find("\"rollbacks\":1"), std::string::npos);
}

TEST(PsServerRollback, AnOlderRestartThanTheServersIsRefused) {
  Server s(Mode::async);
  s.send(init_at(10, 7, 5.0f, s.elements));
  try {
    s.send(init_at(3, 6, 1.0f, s.elements));
    FAIL() << "an init of generation 6 after 7 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("already continues in generation 7"), std::string::npos) << e.what();
  }
  Request read(proto::Type::pull, 0, -1);
  read.generation = 7;
  net::Message r = s.send(read);
  ASSERT_TRUE(proto::decode(r.body).header.flags & proto::kFlagReady);
  EXPECT_FLOAT_EQ(r.tensor.data<float>()[0], 5.0f) << "the stale restart changed nothing";
  EXPECT_EQ(proto::decode(r.body).header.step, 10);
}

TEST(PsServerRollback, ARelaunchedServerWithNoStateYetAppliesNoPush) {
  const std::vector<VariableInfo> vars = testing::dense_w();
  PsServer fresh(PsServerOptions{0, 2, Mode::async, 1, 0, vars, place(vars, 1, PlacementStrategy::greedy, 1 << 20),
                                 make_optimizer({.name = "sgd"})});
  net::Message r = fresh.handle(push_of(1, 40, 0, 1.0f, 4), net::PeerIdentity{"worker", 1, "127.0.0.1:2"});
  EXPECT_TRUE(proto::decode(r.body).header.flags & proto::kFlagRolledBack);
  EXPECT_EQ(fresh.stats().applied, 0u);
  // A pull of a step (the worker pulled values before, from the server this one replaces)
  // is answered the same way at once; only a plain read waits for the restore.
  Request pull(proto::Type::pull, 1, 41);
  pull.wait_ms = 10000;
  net::Message p = fresh.handle(pull.message(), net::PeerIdentity{"worker", 1, "127.0.0.1:2"});
  EXPECT_TRUE(proto::decode(p.body).header.flags & proto::kFlagRolledBack);
}

}  // namespace
}  // namespace trib::ps
