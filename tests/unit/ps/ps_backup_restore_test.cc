// strategy.ps_replicas: a second loss of a shard before its new (late) backup held the copy.
// No copy is left, so the chief restores the shard from the newest checkpoint at that backup:
// the restore makes it the acting primary in the shard's next free epoch, and the job rolls
// back to the checkpoint (trib/ps/ps_backup.h). Servers driven by hand, in this process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ps/replica_wire.h"
#include "ps_request.h"
#include "replica_fixtures.h"
#include "trib/ps/ps_backup.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {
namespace {

using namespace trib::ps::testing;

net::Message restore_at(std::int64_t step, std::int64_t generation, float value) {
  Request r(proto::Type::restore);
  r.generation = generation;
  r.text = nlohmann::json{{"step", step}}.dump();
  return r.message(Tensor::full(Shape{6}, value));
}

proto::Header header_of(const net::Message& m) { return proto::decode(m.body).header; }

TEST(PsBackupRestore, ABackupWithNoCopyTakesTheShardOverFromTheChiefsRestoreOnly) {
  PsBackup late(options(Mode::async), /*copy_first=*/true);
  std::vector<std::int64_t> claimed;
  // Epoch 1 went to the takeover after the shard's first loss.
  late.set_claim([&](std::int64_t epoch) {
    claimed.push_back(epoch);
    return epoch != 1;
  });
  int published = 0;
  late.set_taken_over([&] { ++published; });

  // A worker's request finds no copy: refused, as a lost server.
  Request push(proto::Type::push, 1, 70);
  push.seq = 9;
  EXPECT_THROW(late.handle(push.message(gradient(1.0f)), worker_at(1, "w1")), Unavailable);
  EXPECT_THROW(late.handle(Request(proto::Type::pull, 1, -1).message(), worker_at(1, "w1")), Unavailable);
  EXPECT_FALSE(late.acting());
  EXPECT_EQ(published, 0);

  // The chief's restore (the checkpoint at step 50, generation 9) makes it the shard's server.
  net::Message restored = late.handle(restore_at(50, 9, 3.0f), kChief);
  EXPECT_EQ(header_of(restored).step, 50);
  EXPECT_TRUE(late.acting());
  EXPECT_TRUE(late.holds_copy());
  EXPECT_EQ(late.server().epoch(), 2) << "the next free epoch";
  EXPECT_EQ(claimed, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(published, 1);

  // A push from before the restore is answered rolled back; the rewound worker reads the
  // checkpoint's values at its step.
  net::Message late_push = late.handle(push.message(gradient(1.0f)), worker_at(1, "w1"));
  EXPECT_TRUE(header_of(late_push).flags & proto::kFlagRolledBack);
  Request read(proto::Type::pull, 1, -1);
  read.generation = 9;
  net::Message r = late.handle(read.message(), worker_at(1, "w1"));
  EXPECT_EQ(header_of(r).step, 50);
  ASSERT_TRUE(r.tensor.defined());
  EXPECT_FLOAT_EQ(r.tensor.data<float>()[0], 3.0f);

  // The lost primary's frames (were it only cut off) are refused, naming the new epoch.
  PsServer primary(options(Mode::async));
  primary.handle(Request(proto::Type::init).message(Tensor::zeros(DType::f32, Shape{6})), kChief);
  std::optional<std::int64_t> refusal;
  primary.send_state([&](const net::Message& m) {
    refusal = replica::decode_refusal(late.handle(m, {"ps", 0, "primary"}).body);
    return !refusal;
  });
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(*refusal, 2);
  net::Message again = late.handle(read.message(), worker_at(1, "w1"));
  ASSERT_TRUE(again.tensor.defined());
  EXPECT_FLOAT_EQ(again.tensor.data<float>()[0], 3.0f) << "the copy was not applied";
}

TEST(PsBackupRestore, ABackupThatCannotClaimAnEpochRefusesTheRestore) {
  PsBackup late(options(Mode::async), /*copy_first=*/true);
  late.set_claim([](std::int64_t) { return false; });
  EXPECT_THROW(late.handle(restore_at(50, 9, 3.0f), kChief), Unavailable);
  EXPECT_FALSE(late.acting());
}

}  // namespace
}  // namespace trib::ps
