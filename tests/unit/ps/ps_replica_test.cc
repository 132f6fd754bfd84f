// strategy.ps_replicas: a primary server hands every change to its backup before it answers
// (chain replication), so the backup holds the same state; a backup that takes over serves
// on with no rollback and applies a retried push once (src/ps/ps_server_replica.cc,
// trib/ps/ps_backup.h, src/ps/replica_wire.h). Servers driven by hand, in this process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "ps/replica_wire.h"
#include "ps_request.h"
#include "replica_fixtures.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_backup.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {
namespace {

using testing::Request;

using testing::gradient;
using testing::kChief;
using testing::options;
using testing::state;
using testing::worker_at;

// A primary whose forward hook feeds its backup directly, counting frames; the hook runs
// before handle() returns, as BackupLink's does.
struct Pair {
  explicit Pair(Mode mode, int workers = 2) : primary(options(mode, workers)), backup(options(mode, workers)) {
    primary.set_forward([this](const net::Message& frame, std::int64_t&) {
      ++frames;
      // A refusal (the backup took over) fences the primary, as BackupLink does.
      return !replica::decode_refusal(backup.handle(frame, net::PeerIdentity{"ps", 0, "primary"}).body);
    });
    primary.handle(Request(proto::Type::init).message(Tensor::zeros(DType::f32, Shape{6})), kChief);
  }
  net::Message push(int w, std::int64_t step, float g, std::uint32_t seq, const std::string& address) {
    Request r(proto::Type::push, w, step);
    r.seq = seq;
    r.lr = 0.1f;
    return primary.handle(r.message(gradient(g)), worker_at(w, address));
  }
  PsServer primary;
  PsBackup backup;
  int frames = 0;
};

TEST(PsReplica, EveryAsyncUpdateIsOnTheBackupBeforeThePrimaryAnswers) {
  Pair p(Mode::async);
  EXPECT_EQ(p.frames, 1) << "the init";
  for (int i = 1; i <= 6; ++i) {
    p.push(i % 2, i, 0.5f * i, static_cast<std::uint32_t>(i), i % 2 ? "10.0.0.2:1" : "10.0.0.1:100");
    // The answer has come back: the backup holds exactly what the primary holds, bit for bit.
    // One frame per push, and one the first time each worker's connection is seen.
    EXPECT_EQ(p.frames, 1 + i + std::min(i, 2));
    EXPECT_EQ(state(p.primary), state(p.backup.server())) << "after push " << i;
  }
  EXPECT_EQ(p.backup.server().stats().applied, 6u);
  EXPECT_EQ(p.primary.stats().forwarded, 9u);
  EXPECT_FALSE(p.backup.acting());
}

TEST(PsReplica, SyncRoundsAndALostWorkerCloseAlikeOnTheBackup) {
  Pair p(Mode::sync, 3);
  p.push(0, 0, 1.0f, 1, "a:1");
  p.push(1, 0, 2.0f, 1, "b:1");
  // Worker 2's connection closes on the primary: the round closes with the two others, on
  // both servers at the same point.
  p.primary.handle(Request(proto::Type::pull, 2, -1).message(), worker_at(2, "c:1"));
  p.primary.connection_closed(worker_at(2, "c:1"));
  EXPECT_EQ(p.primary.stats().applied, 1u);
  EXPECT_EQ(p.backup.server().stats().applied, 1u);
  EXPECT_EQ(p.backup.server().stats().workers_lost, 1u);
  EXPECT_EQ(state(p.primary), state(p.backup.server()));
  // A membership loss and a later holder of the index are forwarded too.
  p.primary.worker_lost(1, 5);
  p.primary.worker_joined(1, 6);
  EXPECT_EQ(p.backup.server().stats().workers_readmitted, p.primary.stats().workers_readmitted);
  EXPECT_EQ(p.backup.server().stats().workers_lost, p.primary.stats().workers_lost);
}

TEST(PsReplica, TheBackupTakesOverWithNoRollbackAndAppliesARetriedPushOnce) {
  Pair p(Mode::async);
  p.push(0, 0, 1.0f, 1, "a:1");
  p.push(0, 1, 2.0f, 2, "a:1");
  const auto before = state(p.primary);
  // The primary is lost after it applied and forwarded push 2, before its answer arrived:
  // the worker sends the same push to the backup, directly.
  Request again(proto::Type::push, 0, 1);
  again.seq = 2;
  again.lr = 0.1f;
  net::Message r = p.backup.handle(again.message(gradient(2.0f)), worker_at(0, "a:2"));
  EXPECT_EQ(proto::decode(r.body).header.flags & proto::kFlagRolledBack, 0) << "no rollback";
  EXPECT_TRUE(p.backup.acting());
  EXPECT_EQ(p.backup.server().stats().takeovers, 1u);
  EXPECT_EQ(p.backup.server().stats().duplicate_pushes, 1u);
  EXPECT_EQ(p.backup.server().stats().applied, 2u) << "applied once";
  EXPECT_EQ(state(p.backup.server()), before);
  // The worker's next step goes on from there, with no readmission (it was never lost).
  Request next(proto::Type::push, 0, 2);
  next.seq = 3;
  next.lr = 0.1f;
  p.backup.handle(next.message(gradient(3.0f)), worker_at(0, "a:2"));
  EXPECT_EQ(p.backup.server().stats().applied, 3u);
  EXPECT_EQ(p.backup.server().stats().workers_readmitted, 0u);
  Request read(proto::Type::pull, 0, 3);
  net::Message pulled = p.backup.handle(read.message(), worker_at(0, "a:2"));
  EXPECT_NE(proto::decode(pulled.body).header.flags & proto::kFlagReady, 0);
  // A former primary still forwarding (cut off, not dead) is refused from now on, told the
  // shard's new epoch, and applies nothing.
  replica::Frame late{replica::Kind::lost, 1, 9, "", ""};
  net::Message refused =
      p.backup.handle(net::Message{replica::kReplicaMethod, replica::encode(late), Tensor()}, kChief);
  EXPECT_EQ(replica::decode_refusal(refused.body), std::optional<std::int64_t>(1));
  EXPECT_EQ(p.backup.server().stats().workers_lost, 0u);
}

TEST(PsReplica, APushRetriedWithoutAnyForwardIsAppliedOnTheBackup) {
  // The primary applied the push but died before forwarding it: the backup never saw it and
  // applies the retried one (the worker was never answered, so nothing it was told is lost).
  Pair p(Mode::async);
  p.push(0, 0, 1.0f, 1, "a:1");
  Request lost(proto::Type::push, 0, 1);
  lost.seq = 2;
  lost.lr = 0.1f;
  p.backup.handle(lost.message(gradient(2.0f)), worker_at(0, "a:2"));
  EXPECT_EQ(p.backup.server().stats().applied, 2u);
  EXPECT_EQ(p.backup.server().stats().duplicate_pushes, 0u);
}

TEST(PsReplica, ANewIncarnationNumbersItsPushesAfresh) {
  Pair p(Mode::async);
  p.push(0, 0, 1.0f, 5, "a:1");
  Request relaunched(proto::Type::push, 0, 1);
  relaunched.seq = 1;
  relaunched.generation = 3;
  relaunched.lr = 0.1f;
  p.primary.handle(relaunched.message(gradient(1.0f)), worker_at(0, "a:9"));
  EXPECT_EQ(p.primary.stats().applied, 2u);
  EXPECT_EQ(p.primary.stats().duplicate_pushes, 0u);
  EXPECT_EQ(state(p.primary), state(p.backup.server()));
}

TEST(PsReplicaWire, FramesRoundTripAndMalformedOnesAreRefusedNamingTheField) {
  replica::Frame f{replica::Kind::request, 3, 7, "127.0.0.1:5", "body"};
  replica::Frame back = replica::decode(replica::encode(f));
  EXPECT_EQ(back.kind, f.kind);
  EXPECT_EQ(back.worker, 3);
  EXPECT_EQ(back.number, 7);
  EXPECT_EQ(back.address, "127.0.0.1:5");
  EXPECT_EQ(back.body, "body");
  auto refusal = [](const std::string& bytes) {
    try {
      replica::decode(bytes);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string good = replica::encode(f);
  EXPECT_NE(refusal(good.substr(0, 10)).find("10 bytes"), std::string::npos);
  std::string kind = good;
  kind[0] = 9;
  EXPECT_NE(refusal(kind).find("unknown kind 9"), std::string::npos);
  std::string length = good;
  length[16] = static_cast<char>(0xff);
  EXPECT_NE(refusal(length).find("address of"), std::string::npos) << refusal(length);
  replica::Frame closed{replica::Kind::closed, 1, 0, "x", "extra"};
  EXPECT_NE(refusal(replica::encode(closed)).find("carries 5 bytes of body"), std::string::npos);
}

}  // namespace
}  // namespace trib::ps
