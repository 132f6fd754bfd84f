// strategy.ps_replicas after a first loss: a backup that joins late (a relaunched server)
// starts from a copy of its primary's whole state and follows it from there; a primary whose
// backup took the shard over while it was cut off is fenced (src/ps/ps_server_state.cc,
// trib/ps/ps_backup.h, trib/ps/backup_link.h). Servers driven by hand, in this process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ps/replica_wire.h"
#include "ps_request.h"
#include "replica_fixtures.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/backup_link.h"
#include "trib/ps/ps_backup.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {
namespace {

// Request, options, state, gradient, kChief, worker_at (replica_fixtures.h).
using namespace trib::ps::testing;

net::Message push(PsServer& s, int w, std::int64_t step, float g, std::uint32_t seq, const std::string& address) {
  Request r(proto::Type::push, w, step);
  r.seq = seq;
  r.lr = 0.1f;
  return s.handle(r.message(gradient(g)), worker_at(w, address));
}

net::Message push(PsBackup& b, int w, std::int64_t step, float g, std::uint32_t seq, const std::string& address) {
  Request r(proto::Type::push, w, step);
  r.seq = seq;
  r.lr = 0.1f;
  return b.handle(r.message(gradient(g)), worker_at(w, address));
}

// Where a primary's frames go: `to`, whose refusal fences the primary (as BackupLink).
PsServer::Forward feed(PsBackup** to) {
  return [to](const net::Message& frame, std::int64_t&) {
    return *to == nullptr || !replica::decode_refusal((*to)->handle(frame, {"ps", 0, "primary"}).body);
  };
}

bool copy_state(PsServer& from, PsBackup& to) {
  return from.send_state([&](const net::Message& m) {
    return !replica::decode_refusal(to.handle(m, {"ps", 0, "primary"}).body);
  });
}

TEST(PsBackupJoin, ALateBackupStartsFromTheWholeStateAndFollowsThePrimaryFromThere) {
  PsServer primary(options(Mode::sync, 3));
  PsBackup* target = nullptr;
  primary.set_forward(feed(&target));
  primary.handle(Request(proto::Type::init).message(Tensor::zeros(DType::f32, Shape{6})), kChief);
  for (int step = 0; step < 3; ++step)
    for (int w = 0; w < 3; ++w)
      push(primary, w, step, 0.5f + w + step, static_cast<std::uint32_t>(step + 1), "w" + std::to_string(w));
  // A round left open (two of three pushed), and a worker lost: the copy must hold both.
  push(primary, 0, 3, 1.0f, 4, "w0");
  push(primary, 1, 3, 2.0f, 4, "w1");
  primary.worker_lost(2, 7);

  PsBackup late(options(Mode::sync, 3), /*copy_first=*/true);
  // Before its copy it cannot take over: it holds nothing a worker was told.
  EXPECT_THROW(push(late, 0, 3, 1.0f, 4, "w0"), Unavailable);
  EXPECT_FALSE(late.acting());
  ASSERT_TRUE(copy_state(primary, late));
  EXPECT_TRUE(late.holds_copy());
  EXPECT_EQ(state(late.server()), state(primary));
  EXPECT_EQ(late.server().stats().applied, primary.stats().applied);
  EXPECT_EQ(late.server().stats().workers_lost, 1u);

  // From here the late backup follows the frames: worker 1 sends push 4 again (a number the
  // copy holds: not applied), then both counted workers take step 4; both servers end alike.
  target = &late;
  push(primary, 1, 3, 2.0f, 4, "w1");  // retried: already applied
  EXPECT_EQ(primary.stats().duplicate_pushes, 1u);
  push(primary, 0, 4, 3.0f, 5, "w0");
  push(primary, 1, 4, 4.0f, 5, "w1");
  EXPECT_EQ(state(late.server()), state(primary));
  EXPECT_EQ(late.server().stats().applied, primary.stats().applied);

  // The primary is lost after applying and forwarding push 5 of worker 1: retried at the late
  // backup, it applies once; the next one applies.
  const std::uint64_t applied = primary.stats().applied;
  push(late, 1, 4, 4.0f, 5, "w1'");
  EXPECT_TRUE(late.acting());
  EXPECT_EQ(late.server().epoch(), 1);
  EXPECT_EQ(late.server().stats().applied, applied);
  // (The primary's own duplicate changed nothing, so it was not forwarded: this is the one.)
  EXPECT_EQ(late.server().stats().duplicate_pushes, 1u);
}

TEST(PsBackupJoin, AFencedPrimaryAcknowledgesNothingMoreAndItsWorkersGoToTheNewPrimary) {
  PsServer primary(options(Mode::async));
  PsBackup backup(options(Mode::async));
  PsBackup* target = &backup;
  primary.set_forward(feed(&target));
  primary.handle(Request(proto::Type::init).message(Tensor::zeros(DType::f32, Shape{6})), kChief);
  push(primary, 0, 0, 1.0f, 1, "a:1");
  push(primary, 1, 0, 2.0f, 1, "b:1");
  // Worker 0 is cut off from the primary (a partition) and goes to the backup, which takes
  // the shard over in epoch 1; the primary is alive and still reached by worker 1.
  push(backup, 0, 1, 3.0f, 2, "a:2");
  ASSERT_TRUE(backup.acting());
  EXPECT_EQ(backup.server().epoch(), 1);
  // Worker 1's push reaches the old primary: its frame is refused, so it is not acknowledged.
  EXPECT_THROW(push(primary, 1, 1, 4.0f, 2, "b:1"), Unavailable);
  EXPECT_TRUE(primary.fenced());
  // Nor is anything after it, pulls included: the worker retries at the new primary.
  EXPECT_THROW(primary.handle(Request(proto::Type::pull, 1, -1).message(), worker_at(1, "b:1")), Unavailable);
  push(backup, 1, 1, 4.0f, 2, "b:2");
  // Every push applied exactly once where it counts: 2 before, 2 after the takeover.
  EXPECT_EQ(backup.server().stats().applied, 4u);
  EXPECT_EQ(backup.server().stats().duplicate_pushes, 0u);
  // The old primary's later snapshot (it tries to take a new backup) is refused as older.
  PsBackup late(options(Mode::async), true);
  PsServer stale(options(Mode::async));  // a primary of epoch 0
  ASSERT_TRUE(copy_state(backup.server(), late));
  EXPECT_FALSE(copy_state(stale, late)) << "a snapshot of an older epoch than the copy held";
  EXPECT_EQ(late.server().epoch(), 1);
}

TEST(PsBackupJoin, ABackupLinkThatLosesItsBackupGoesOnAloneOnlyIfItWinsTheNextEpoch) {
  auto dial = [] () -> BackupLink::Dialled { throw Unavailable("backup unreachable"); };
  const net::Message frame{replica::kReplicaMethod, replica::encode({replica::Kind::lost, 0, 1, "", ""}), Tensor()};
  std::vector<std::string> lines;
  auto log = [&](const std::string& l) { lines.push_back(l); };
  {
    BackupLink link(3, dial, log);
    std::int64_t claimed = -1;
    link.set_claim([&](std::int64_t e) { claimed = e; return true; });
    std::int64_t epoch = 4;
    EXPECT_TRUE(link.forward(frame, epoch));
    EXPECT_EQ(claimed, 5);
    EXPECT_EQ(epoch, 5) << "the shard goes on alone in the epoch it claimed";
    EXPECT_FALSE(link.has_backup());
    EXPECT_FALSE(link.fenced());
    EXPECT_TRUE(link.forward(frame, epoch)) << "alone: nothing to send";
    EXPECT_EQ(epoch, 5);
  }
  {
    // The backup took the epoch first (it took over): this primary was replaced.
    BackupLink link(3, dial, log);
    link.set_claim([](std::int64_t) { return false; });
    std::int64_t epoch = 4;
    EXPECT_FALSE(link.forward(frame, epoch));
    EXPECT_TRUE(link.fenced());
    EXPECT_FALSE(link.forward(frame, epoch));
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("goes on without one (epoch 5)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("this server was replaced"), std::string::npos) << lines[1];
}

// Regression: at a job's end a worker's connection closing is forwarded as an event; with the
// backup gone and the member already leaving the coordinator, the claim threw out of the
// connection's close handler and the server's process aborted.
TEST(PsBackupJoin, ABackupLinkWhoseClaimCannotBeMadeIsFencedWithoutThrowing) {
  auto dial = []() -> BackupLink::Dialled { throw Unavailable("backup unreachable"); };
  const net::Message frame{replica::kReplicaMethod, replica::encode({replica::Kind::closed, 0, 0, "", ""}), Tensor()};
  std::vector<std::string> lines;
  BackupLink link(2, dial, [&](const std::string& l) { lines.push_back(l); });
  link.set_claim([](std::int64_t) -> bool { throw Unavailable("the coordinator was lost: this member is closing"); });
  std::int64_t epoch = 1;
  bool forwarded = true;
  EXPECT_NO_THROW(forwarded = link.forward(frame, epoch));
  EXPECT_FALSE(forwarded) << "it cannot tell whether its backup took over";
  EXPECT_TRUE(link.fenced());
  EXPECT_EQ(epoch, 1);
  EXPECT_FALSE(link.forward(frame, epoch));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("ps 2: its backup is lost (backup unreachable) and the shard's next epoch cannot be claimed "
                          "(the coordinator was lost: this member is closing)"),
            std::string::npos)
      << lines[0];
}

TEST(PsBackupJoin, AMalformedStateIsRefusedNamingTheField) {
  PsServer primary(options(Mode::async));
  primary.handle(Request(proto::Type::init).message(Tensor::zeros(DType::f32, Shape{6})), kChief);
  push(primary, 0, 0, 1.0f, 1, "a:1");
  std::string body;
  primary.send_state([&](const net::Message& m) {
    body = replica::decode(m.body).body;
    return true;
  });
  PsServer other(options(Mode::async));
  other.load_state(body);
  EXPECT_EQ(state(other), state(primary));
  auto refusal = [&](const std::string& bytes) {
    PsServer s(options(Mode::async));
    try {
      s.load_state(bytes);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("xy").find("magic"), std::string::npos) << refusal("xy");
  EXPECT_NE(refusal(body.substr(0, 30)).find("server state: "), std::string::npos) << refusal(body.substr(0, 30));
  EXPECT_NE(refusal(body + "z").find("bytes after its slots"), std::string::npos);
  // A state for three workers does not fit a server of two.
  PsServer three(options(Mode::async, 3));
  std::string wider;
  three.send_state([&](const net::Message& m) {
    wider = replica::decode(m.body).body;
    return true;
  });
  EXPECT_NE(refusal(wider).find("expected 2 (one per worker)"), std::string::npos) << refusal(wider);
}

}  // namespace
}  // namespace trib::ps
