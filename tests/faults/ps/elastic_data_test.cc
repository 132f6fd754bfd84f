// data.assignment: dynamic at the level of parameter server 0: workers claim chunks of the
// data and report their progress in the data cursor of each push; a worker lost mid-chunk
// leaves its unread batches to the others, a joiner (an index beyond the starting workers)
// reads fresh chunks, and counting the batches applied shows none left out or read twice.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "ps/chunk_dispenser.h"
#include "trib/data/data_position.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"
#include "unit/ps/ps_request.h"

namespace trib::ps {
namespace {

using testing::Request;

constexpr std::int64_t kPerEpoch = 20, kChunk = 4, kTotal = 50;  // 2.5 epochs

struct ElasticServer {
  explicit ElasticServer(Mode mode)
      : server([&] {
          PsServerOptions o{0, 4, mode, 1, 0, vars(), place(vars(), 1, PlacementStrategy::greedy, 1 << 20),
                            make_optimizer({.name = "sgd"})};
          o.present_workers = 3;  // worker 3 is a joiner
          o.dispense_data = true;
          return o;
        }()) {
    server.handle(Request(proto::Type::init).message(Tensor::zeros(DType::f32, Shape{4})), peer(0));
    for (int w = 0; w < 3; ++w) send(w, Request(proto::Type::pull, w, -1));
  }
  static std::vector<VariableInfo> vars() { return {{"w", Shape{4}}}; }
  net::PeerIdentity peer(int w) const { return net::PeerIdentity{"worker", w, "10.0.0." + std::to_string(w) + ":1"}; }
  net::Message send(int w, const Request& r, Tensor t = {}) { return server.handle(r.message(std::move(t)), peer(w)); }

  // A claim for one chunk: granted (returns it), or nothing (wait or exhausted).
  std::optional<Chunk> claim(int w, std::string* answer = nullptr) {
    Request r(proto::Type::claim, w);
    r.text = nlohmann::json{{"batches_per_epoch", kPerEpoch}, {"chunk_batches", kChunk}, {"total_batches", kTotal},
                            {"want", 1}}
                 .dump();
    nlohmann::json j = nlohmann::json::parse(proto::decode(send(w, r).body).text);
    if (answer) *answer = j["answer"];
    if (j["chunks"].empty()) return std::nullopt;
    auto c = j["chunks"][0];
    return Chunk{c[0], c[1], c[2], c[3]};
  }
  // The push of worker w's step on batch `b` of chunk `c`, its cursor saying so.
  void push(int w, std::int64_t step, const Chunk& c, std::int64_t b) {
    Request r(proto::Type::push, w, step);
    data::DataPosition p;
    p.set("chunk", chunk_field(c, b + 1));
    r.text = p.serialize();
    send(w, r, Tensor::full(Shape{4}, 1.0f));
  }

  PsServer server;
};

// Each worker in turn reads a batch and pushes it; `lose_at` (tick) loses worker 2 after it
// read a batch it never pushed; worker 3 joins at `join_at`.
std::map<std::pair<std::int64_t, std::int64_t>, int> run(ElasticServer& s, int lose_at, int join_at) {
  std::map<std::pair<std::int64_t, std::int64_t>, int> applied;
  std::vector<std::optional<Chunk>> held(4);
  std::vector<std::int64_t> steps(4, 0);
  std::vector<bool> active{true, true, true, false}, done(4, false);
  for (int tick = 0; tick < 1000; ++tick) {
    if (tick == join_at) active[3] = true;
    const int w = tick % 4;
    if (!active[w] || done[w]) continue;
    if (!held[w] || held[w]->begin == held[w]->end) {
      std::string answer;
      held[w] = s.claim(w, &answer);
      if (!held[w]) {
        done[w] = answer == "exhausted";
        continue;
      }
    }
    const std::int64_t b = held[w]->begin++;
    if (w == 2 && tick >= lose_at) {
      s.server.connection_closed(s.peer(2));  // killed with batch b read, not pushed
      active[2] = false;
      continue;
    }
    s.push(w, steps[w]++, *held[w], b);
    applied[{held[w]->epoch, b}]++;
    if (done[0] && done[1] && (!active[3] || done[3])) break;
  }
  return applied;
}

TEST(ElasticData, ALostWorkersUnreadBatchesAreReadByTheOthersAndEveryBatchIsAppliedOnce) {
  ElasticServer s(Mode::async);
  auto applied = run(s, /*lose_at=*/30, /*join_at=*/-1);
  EXPECT_EQ(static_cast<std::int64_t>(applied.size()), kTotal) << "no batch left out";
  for (const auto& [batch, times] : applied) EXPECT_EQ(times, 1) << batch.first << "/" << batch.second;
  PsStats st = s.server.stats();
  EXPECT_EQ(st.data_applied, kTotal);
  EXPECT_GT(st.data_returned, 0) << "worker 2's chunk went back";
  EXPECT_EQ(st.applied, static_cast<std::uint64_t>(kTotal)) << "one update per batch";
}

TEST(ElasticData, AJoinerReadsItsShareAndEveryBatchIsAppliedOnce) {
  ElasticServer s(Mode::async);
  auto applied = run(s, /*lose_at=*/1 << 30, /*join_at=*/20);
  EXPECT_EQ(static_cast<std::int64_t>(applied.size()), kTotal);
  for (const auto& [batch, times] : applied) EXPECT_EQ(times, 1);
  PsStats st = s.server.stats();
  EXPECT_EQ(st.workers_joined, 1u);
  EXPECT_EQ(st.data_applied, kTotal);
}

TEST(ElasticData, AWorkerThatStopsEarlyLeavesItsChunkToTheOthers) {
  ElasticServer s(Mode::async);
  std::optional<Chunk> c = s.claim(1);
  ASSERT_TRUE(c);
  s.push(1, 0, *c, c->begin);
  s.send(1, Request(proto::Type::done, 1));  // SIGTERM: it leaves after that step
  // Fresh chunks first go to whoever asks; the returned part comes first.
  std::optional<Chunk> again = s.claim(0);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, (Chunk{c->epoch, c->index, c->begin + 1, c->end}));
}

// A joiner in sync mode: the round open when it arrives closes without it; it is counted
// from the next one, and starts at the current round with the current values.
TEST(ElasticData, ASyncJoinerIsCountedFromTheNextRound) {
  ElasticServer s(Mode::sync);
  auto push = [&](int w, std::int64_t step) { s.send(w, Request(proto::Type::push, w, step), Tensor::full(Shape{4}, 1.0f)); };
  auto ready = [&](int w, std::int64_t step) {
    return (proto::decode(s.send(w, Request(proto::Type::pull, w, step)).body).header.flags & proto::kFlagReady) != 0;
  };
  push(0, 0);
  push(1, 0);
  net::Message read = s.send(3, Request(proto::Type::pull, 3, -1));  // worker 3 joins mid-round
  EXPECT_EQ(proto::decode(read.body).header.step, 0) << "it starts at the current round";
  EXPECT_FALSE(ready(0, 1));
  push(2, 0);
  EXPECT_TRUE(ready(0, 1)) << "round 0 closed with the three workers it was open for";
  push(0, 1);
  push(1, 1);
  push(2, 1);
  EXPECT_FALSE(ready(0, 2)) << "round 1 waits for the joiner";
  push(3, 1);
  EXPECT_TRUE(ready(0, 2));
  EXPECT_EQ(s.server.stats().workers_joined, 1u);
}

TEST(ElasticData, AServerNotToldToHandOutDataRefusesClaims) {
  PsServerOptions o{0, 2, Mode::async, 1, 0, ElasticServer::vars(),
                    place(ElasticServer::vars(), 1, PlacementStrategy::greedy, 1 << 20), make_optimizer({.name = "sgd"})};
  PsServer other(o);
  Request r(proto::Type::claim, 0);
  r.text = "{}";
  EXPECT_THROW(other.handle(r.message(), net::PeerIdentity{"worker", 0, "10.0.0.9:1"}), InvalidArgument);
}

}  // namespace
}  // namespace trib::ps
