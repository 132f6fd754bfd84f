// A push a server applied already, replayed by a worker relaunched at an older server's cursor
// (src/ps/ps_server_replay.cc), and a sync round that keeps a lost worker's contribution.
// Cursors here are numbers, "how many batches this worker applied": the server only needs
// PsServerOptions::cursors to say which covers which.
#include <gtest/gtest.h>

#include <string>

#include "test_server.h"

namespace trib::ps::testing {
namespace {

DataCursors counting_cursors() {
  return {[](const std::string& have, const std::string& pushed) {
            return !have.empty() && std::stoll(have) >= std::stoll(pushed);
          },
          [](const std::string& have, const std::string& pushed) {
            return have.empty() || std::stoll(pushed) > std::stoll(have) ? pushed : have;
          }};
}

struct ReplayServer {
  explicit ReplayServer(Mode mode, DataCursors cursors = counting_cursors()) : server(options(mode, cursors)) {
    send(Request(proto::Type::init), Tensor::zeros(DType::f32, Shape{4}));
  }
  static PsServerOptions options(Mode mode, DataCursors cursors) {
    PsServerOptions o{0, 2, mode, 1, 0, dense_w(), place(dense_w(), 1, PlacementStrategy::greedy, 1 << 20),
                      make_optimizer({.name = "sgd"})};
    o.cursors = std::move(cursors);
    return o;
  }
  net::Message send(const Request& r, Tensor t = {}) {
    return server.handle(r.message(std::move(t)), net::PeerIdentity{"worker", r.worker, fmt::format("127.0.0.1:{}", r.worker + 1)});
  }
  // A push of gradient `value` everywhere, carrying cursor `cursor` (`flags`: kFlagReplay), from
  // the worker's incarnation `generation`.
  void push(int worker, std::int64_t step, float value, const std::string& cursor, std::uint16_t flags = 0,
            std::int64_t generation = 0) {
    Request r(proto::Type::push, worker, step);
    r.text = cursor;
    r.flags = flags;
    r.generation = generation;
    send(r, Tensor::full(Shape{4}, value));
  }
  // The first value a pull for `step` returns, or nothing while the mode says wait.
  std::optional<float> pull(int worker, std::int64_t step) {
    net::Message r = send(Request(proto::Type::pull, worker, step));
    if ((proto::decode(r.body).header.flags & proto::kFlagReady) == 0) return std::nullopt;
    return r.tensor.data<float>()[0];
  }
  void done(int worker) { send(Request(proto::Type::done, worker)); }
  std::string cursor_of(int worker) {
    net::Message r = send(Request(proto::Type::pull, worker, -1));
    return proto::decode(r.body).text;
  }

  PsServer server;
};

TEST(PsServerReplay, AnAsyncPushWhoseCursorTheServerCoversIsAcknowledgedNotApplied) {
  ReplayServer s(Mode::async);
  s.push(1, 0, 1.0f, "1");
  s.push(1, 1, 1.0f, "2");
  EXPECT_EQ(s.pull(1, 2), -2.0f);
  s.push(1, 1, 1.0f, "2");  // the relaunched worker's replay of step 1
  EXPECT_EQ(s.pull(1, 2), -2.0f) << "applied once";
  EXPECT_EQ(s.server.stats().replayed_pushes, 1u);
  EXPECT_EQ(s.server.stats().applied, 2u);
  s.push(1, 2, 1.0f, "3");
  EXPECT_EQ(s.pull(1, 3), -3.0f);
  EXPECT_EQ(s.cursor_of(1), "3");
}

TEST(PsServerReplay, WithoutCursorOrderEveryPushIsApplied) {
  ReplayServer s(Mode::async, DataCursors{});
  s.push(1, 0, 1.0f, "1");
  s.push(1, 0, 1.0f, "1");
  EXPECT_EQ(s.pull(1, 1), -2.0f);
  EXPECT_EQ(s.server.stats().replayed_pushes, 0u);
}

TEST(PsServerReplay, ASyncReplayIsItsWorkersPartOfTheRoundWithNothingAdded) {
  ReplayServer s(Mode::sync);
  s.push(0, 0, 1.0f, "1");
  s.push(1, 0, 1.0f, "1");
  EXPECT_EQ(s.pull(0, 1), -1.0f);
  s.push(1, 1, 5.0f, "1");  // worker 1's replay of its batch of step 0
  EXPECT_FALSE(s.pull(0, 2)) << "the round still waits for worker 0";
  s.push(0, 1, 3.0f, "2");
  EXPECT_EQ(s.pull(0, 2), -4.0f) << "worker 0's gradient alone, not averaged with nothing";
  EXPECT_EQ(s.server.stats().replayed_pushes, 1u);
  EXPECT_EQ(s.server.stats().dropped_late, 0u);
}

// Before: the round closed as soon as the lost worker's contribution equalled the survivors'
// count, and worker 0's push of that step was then dropped as late.
TEST(PsServerReplay, ASyncRoundKeepsALostWorkersContributionAndWaitsForTheSurvivors) {
  ReplayServer s(Mode::sync);
  s.push(1, 0, 2.0f, "1");
  s.server.worker_lost(1, 1);
  EXPECT_FALSE(s.pull(0, 1)) << "worker 0 has not pushed step 0";
  s.push(0, 0, 4.0f, "1");
  EXPECT_EQ(s.pull(0, 1), -3.0f) << "both batches, averaged";
  EXPECT_EQ(s.server.stats().dropped_late, 0u);
}

// The server that lacked the batch of a worker lost between its pushes: the round of that
// step closed here without it, so the relaunched worker's replay is late. Flagged as a replay
// (kFlagReplay) and not covered here, it is added to the round open now, beside the others'
// batches, instead of being dropped as late; a late push not so flagged is dropped as before.
TEST(PsServerReplay, ASyncReplayLateWhereItsBatchIsLackingIsAddedToTheOpenRound) {
  ReplayServer s(Mode::sync);
  s.push(0, 0, 1.0f, "1");
  s.push(1, 0, 1.0f, "1");  // round 0: -1
  s.server.worker_lost(1, 1);
  s.push(0, 1, 2.0f, "2");  // round 1 closes with worker 0 alone: -3
  EXPECT_EQ(s.pull(0, 2), -3.0f);
  s.server.worker_joined(1, 2);                     // relaunched: counted from round 2
  s.push(1, 1, 6.0f, "2", proto::kFlagReplay, 2);  // its replay of step 1, whose round closed
  EXPECT_EQ(s.server.stats().dropped_late, 0u);
  EXPECT_EQ(s.server.stats().late_replays, 1u);
  Request of(proto::Type::pull, 0, -1);
  of.flags = proto::kFlagCursorOf;
  of.text = "1";
  EXPECT_EQ(proto::decode(s.send(of).body).text, "2") << "the batch counts as applied here";
  s.push(0, 2, 3.0f, "3");
  EXPECT_FALSE(s.pull(0, 3)) << "the replay is not worker 1's part of round 2";
  s.push(1, 2, 3.0f, "3", 0, 2);
  EXPECT_EQ(s.pull(0, 3), -7.0f) << "round 2: both workers' batches and the replayed one, averaged";
  EXPECT_EQ(s.server.stats().applied, 3u);
  s.push(1, 1, 6.0f, "4", 0, 2);  // late, not a replay: dropped
  EXPECT_EQ(s.server.stats().dropped_late, 1u);
  EXPECT_EQ(s.server.stats().late_replays, 1u);
}

TEST(PsServerReplay, ARoundWithOnlyAReplayLeftClosesApplyingNothing) {
  ReplayServer s(Mode::sync);
  s.push(0, 0, 1.0f, "1");
  s.push(1, 0, 1.0f, "1");
  s.done(0);
  s.push(1, 1, 7.0f, "1");  // a replay, and worker 0 is done: nothing to wait for
  EXPECT_EQ(s.pull(1, 2), -1.0f);
}

TEST(PsServerReplay, AMalformedCursorIsRefused) {
  ReplayServer s(Mode::async, {[](const std::string&, const std::string&) -> bool {
                                 throw InvalidArgument("a data cursor that is not one");
                               },
                               [](const std::string&, const std::string& p) { return p; }});
  EXPECT_THROW(s.push(1, 0, 1.0f, "garbage"), InvalidArgument);
  EXPECT_EQ(s.server.stats().applied, 0u);
  EXPECT_EQ(s.server.stats().refused, 1u);
}

}  // namespace
}  // namespace trib::ps::testing
