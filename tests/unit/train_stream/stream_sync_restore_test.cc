// The stream checkpoint barriers (train_stream/stream_sync.h) under an in-place restore: keys
// scoped by the restore generation, and waits that give way to a restore. Workers are
// threads sharing an in-memory store, as the coordinator's would be.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/training_state.h"
#include "unit/train_stream/memory_store.h"
#include "trib/core/error.h"
#include "train_stream/stream_sync.h"
#include "trib/stream/stream_position.h"
#include "trib/update/update_strategy.h"

namespace trib::train_stream {
namespace {

using testing::Store;
using testing::worker;

data::DataPosition at(std::int32_t partition, std::int64_t offset) {
  data::DataPosition p;
  stream::set_offsets(p, "t", {{partition, offset}});
  return p;
}

// As the chief announces a restore (ps/ps_recovery.h), with a checkpoint's kafka section.
void announce(Store& store, std::int64_t generation, std::int64_t step) {
  nlohmann::json sections = {{"kafka", nlohmann::json::object()}};
  store.set(update::kRestoreKey,
            nlohmann::json{{"generation", generation}, {"step", step}, {"sections", sections}}.dump());
}

constexpr auto kShort = std::chrono::seconds(20);

TEST(StreamSyncRestore, ARedoneStepsBarrierDoesNotFindTheFirstPassOffers) {
  Store store;
  const train::Distribution d0 = worker(store, 0), d1 = worker(store, 1);
  StreamSync chief(d0, kShort), other(d1, kShort);
  // The first pass: worker 1 offered step 200 at offset 7, then the job rolled back.
  auto first = std::async(std::launch::async, [&] { return other.offer(200, at(1, 7)); });
  announce(store, 5, 100);
  EXPECT_FALSE(first.get()) << "an offer gives way to a newer restore: no checkpoint, no commit";
  // Both rewind to generation 5 and redo step 200: the chief must wait for the redone offer.
  chief.set_scope(5);
  other.set_scope(5);
  EXPECT_FALSE(chief.newer_restore()) << "the announced restore is this scope's";
  auto gathered = std::async(std::launch::async, [&] { return chief.gather(200, at(0, 3)); });
  EXPECT_EQ(gathered.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the first pass's offer was taken for the redone step's";
  auto redone = std::async(std::launch::async, [&] { return other.offer(200, at(1, 9)); });
  std::optional<data::DataPosition> merged = gathered.get();
  ASSERT_TRUE(merged);
  EXPECT_EQ(stream::offsets_of(*merged, "t"), (stream::PartitionOffsets{{0, 3}, {1, 9}}));
  chief.published(200, true);
  EXPECT_TRUE(redone.get());
}

TEST(StreamSyncRestore, TheChiefsGatherGivesWayToAWorkerWaitingForARestore) {
  Store store;
  const train::Distribution d0 = worker(store, 0), d1 = worker(store, 1);
  StreamSync chief(d0, kShort);
  auto gathered = std::async(std::launch::async, [&] { return chief.gather(300, at(0, 3)); });
  EXPECT_EQ(gathered.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  // Worker 1's step 300 found the server lost: it waits for the chief's restore instead of
  // offering (PsUpdate::await_restore says so, with the generation it last rewound to).
  store.set(update::kRestoreWantedKey, "0");
  EXPECT_FALSE(gathered.get()) << "the chief must go on to its next step, which restores the job";
  // A stale wish, from before the restore both rewound to, no longer makes it give way.
  chief.set_scope(4);
  StreamSync other(d1, kShort);
  other.set_scope(4);
  auto again = std::async(std::launch::async, [&] { return chief.gather(300, at(0, 3)); });
  EXPECT_EQ(again.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  auto offered = std::async(std::launch::async, [&] { return other.offer(300, at(1, 1)); });
  EXPECT_TRUE(again.get());
  chief.published(300, false);  // not written (a server lost while saving)
  EXPECT_FALSE(offered.get()) << "a checkpoint the chief did not write is not committed";
}

TEST(StreamSyncRestore, AFinishedWorkersWaitGivesWayToARestoreAndItsNewScopeIsMet) {
  Store store;
  const train::Distribution d0 = worker(store, 0), d1 = worker(store, 1);
  StreamSync chief(d0, kShort), other(d1, kShort);
  auto final_wait = std::async(std::launch::async, [&] { return other.final_offsets(at(1, 50)); });
  announce(store, 3, 100);
  EXPECT_FALSE(final_wait.get());
  std::optional<AnnouncedRestore> r = other.newer_restore();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->generation, 3);
  EXPECT_EQ(r->step, 100);
  EXPECT_NE(r->sections.find("kafka"), std::string::npos);
  // It adopts the restore and hands over again in its scope; the chief gathers there.
  other.set_scope(3);
  chief.set_scope(3);
  auto final_again = std::async(std::launch::async, [&] { return other.final_offsets(at(1, 40)); });
  const data::DataPosition merged = chief.gather_final(at(0, 3));
  EXPECT_EQ(stream::offsets_of(merged, "t"), (stream::PartitionOffsets{{0, 3}, {1, 40}}));
  chief.published_final();
  EXPECT_TRUE(final_again.get());
  // A worker relaunched now starts in the scope the others rewound to.
  StreamSync relaunched(d1, kShort);
  store.set("stream/start/run_id", "r");
  store.set("stream/start/offsets", train::data_position_to_json(data::DataPosition{}).dump());
  relaunched.start({});
  EXPECT_EQ(relaunched.scope(), 3);
}

// Allreduce: the group re-formed without a lost worker (stream_sync.h, "Allreduce, a lost
// worker"). The plan as allreduce_membership.cc writes it.
void plan(Store& store, std::int64_t generation, const std::vector<int>& workers) {
  store.set("allreduce/plan", nlohmann::json{{"generation", generation}, {"workers", workers}}.dump());
}

TEST(StreamSyncRegroup, TheChiefWaitsForTheNewGroupsMembersOnly) {
  Store store;
  const train::Distribution d0 = worker(store, 0, 3), d1 = worker(store, 1, 3);
  StreamSync chief(d0, kShort), other(d1, kShort);
  plan(store, 4, {0, 1});
  for (StreamSync* s : {&chief, &other}) {
    s->set_scope(4);
    s->set_members({0, 1});
  }
  auto offered = std::async(std::launch::async, [&] { return other.offer(300, at(1, 9)); });
  std::optional<data::DataPosition> merged = chief.gather(300, at(0, 3));  // worker 2 never offers
  ASSERT_TRUE(merged);
  EXPECT_EQ(stream::offsets_of(*merged, "t"), (stream::PartitionOffsets{{0, 3}, {1, 9}}));
  chief.published(300, true);
  EXPECT_TRUE(offered.get());
  auto final1 = std::async(std::launch::async, [&] { return other.final_offsets(at(1, 11)); });
  EXPECT_EQ(stream::offsets_of(chief.gather_final(at(0, 5)), "t"), (stream::PartitionOffsets{{0, 5}, {1, 11}}));
  chief.published_final();
  EXPECT_TRUE(final1.get());
}

TEST(StreamSyncRegroup, TheChiefsBarrierGivesWayForALostWorker) {
  Store store;
  std::atomic<bool> worker2_lost{false};
  train::Distribution d0 = worker(store, 0, 3);
  d0.worker_lost = [&](int w) { return w == 2 && worker2_lost.load(); };
  const train::Distribution d1 = worker(store, 1, 3);
  StreamSync chief(d0, kShort), other(d1, kShort);
  auto offered = std::async(std::launch::async, [&] { return other.offer(200, at(1, 9)); });
  auto gathered = std::async(std::launch::async, [&] { return chief.gather(200, at(0, 3)); });
  worker2_lost = true;  // killed before its offer: every survivor waits at the barrier
  EXPECT_FALSE(gathered.get()) << "no checkpoint without worker 2's offsets";
  chief.published(200, false);
  EXPECT_FALSE(offered.get()) << "not written: worker 1 does not commit";
  // Lost after its last exchange: its final offsets never come. With no cursor of its last
  // step the chief says so; with one (the group's table) it takes worker 2's progress there.
  auto final1 = std::async(std::launch::async, [&] { return other.final_offsets(at(1, 11)); });
  EXPECT_THROW(chief.gather_final(at(0, 5)), Unavailable);
  std::vector<int> taken;
  const auto cursor = [](int w) { return w == 2 ? std::optional<data::DataPosition>(at(2, 7)) : std::nullopt; };
  EXPECT_EQ(stream::offsets_of(chief.gather_final(at(0, 5), cursor, &taken), "t"),
            (stream::PartitionOffsets{{0, 5}, {1, 11}, {2, 7}}));
  EXPECT_EQ(taken, std::vector<int>{2}) << "worker 1 handed its final offsets over";
  chief.published_final();
  EXPECT_TRUE(final1.get());
}

// Allreduce: the chief lost after the run's last exchange, while the others wait for the last
// checkpoint: they give way (to hand its relaunched process the final state), and a last
// checkpoint written in another scope (the relaunched chief's) releases them.
TEST(StreamSyncRegroup, TheFinalBarrierGivesWayForALostChiefAndTakesItsRelaunchsCheckpoint) {
  Store store;
  std::atomic<bool> chief_lost{false};
  train::Distribution d1 = worker(store, 1, 3);
  d1.worker_lost = [&](int w) { return w == 0 && chief_lost.load(); };
  const train::Distribution d0 = worker(store, 0, 3);
  StreamSync other(d1, kShort), relaunched(d0, kShort);
  other.set_scope(4);
  EXPECT_FALSE(other.chief_lost());
  auto waited = std::async(std::launch::async, [&] { return other.final_offsets(at(1, 11)); });
  chief_lost = true;
  EXPECT_FALSE(waited.get());
  EXPECT_TRUE(other.chief_lost());
  chief_lost = false;  // its relaunched process joined and took the final state
  auto again = std::async(std::launch::async, [&] { return other.final_offsets(at(1, 11)); });
  relaunched.published_final();  // scope 0: it rewound nothing
  EXPECT_TRUE(again.get());
  EXPECT_FALSE(relaunched.chief_lost()) << "the chief itself never gives way for itself";
}

TEST(StreamSyncRegroup, ABarrierGivesWayToANewerGroup) {
  Store store;
  const train::Distribution d0 = worker(store, 0, 3), d1 = worker(store, 1, 3);
  StreamSync chief(d0, kShort), other(d1, kShort);
  plan(store, 0, {0, 1, 2});
  auto offered = std::async(std::launch::async, [&] { return other.offer(200, at(1, 9)); });
  auto gathered = std::async(std::launch::async, [&] { return chief.gather(200, at(0, 3)); });
  // Worker 2's exchange failed: it re-forms the group and waits for the others there.
  plan(store, 1, {0, 1, 2});
  EXPECT_FALSE(offered.get());
  EXPECT_FALSE(gathered.get());
  // Every member of the new group says it sought before any reads again.
  for (StreamSync* s : {&chief, &other}) {
    s->set_scope(1);
    s->set_members({0, 1});
  }
  auto said = std::async(std::launch::async, [&] { return other.rendezvous("rewound"); });
  EXPECT_TRUE(chief.rendezvous("rewound"));
  EXPECT_TRUE(said.get());
  // A member lost before it said so: the next group, planned without it, releases the wait.
  chief.set_members({0, 1, 2});
  auto waiting = std::async(std::launch::async, [&] { return chief.rendezvous("again"); });
  EXPECT_TRUE(other.rendezvous("again"));
  plan(store, 2, {0, 1});
  EXPECT_FALSE(waiting.get());
}

// A second worker lost while the survivors roll back: every survivor waits at the rewind's
// rendezvous, so no exchange fails and nobody plans a newer group; the lost member releases
// the wait, and the next exchange fails into the re-forming.
TEST(StreamSyncRegroup, TheRewindsRendezvousGivesWayForAMemberLostBeforeItSaidSo) {
  Store store;
  std::atomic<bool> worker2_lost{false};
  train::Distribution d0 = worker(store, 0, 4), d1 = worker(store, 1, 4);
  for (train::Distribution* d : {&d0, &d1}) d->worker_lost = [&](int w) { return w == 2 && worker2_lost.load(); };
  StreamSync chief(d0, kShort), other(d1, kShort);
  plan(store, 1, {0, 1, 2});
  for (StreamSync* s : {&chief, &other}) {
    s->set_scope(1);
    s->set_members({0, 1, 2});
  }
  auto said0 = std::async(std::launch::async, [&] { return chief.rendezvous("rewound"); });
  auto said1 = std::async(std::launch::async, [&] { return other.rendezvous("rewound"); });
  EXPECT_EQ(said0.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout) << "worker 2 is awaited";
  worker2_lost = true;
  EXPECT_FALSE(said0.get());
  EXPECT_FALSE(said1.get());
}

}  // namespace
}  // namespace trib::train_stream
