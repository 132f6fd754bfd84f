// The stream checkpoint barriers (train_stream/stream_sync.h) under an in-place restore: keys
// scoped by the restore generation, and waits that give way to a restore. Workers are
// threads sharing an in-memory store, as the coordinator's would be.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "train/training_state.h"
#include "train_stream/stream_sync.h"
#include "trib/stream/stream_position.h"
#include "trib/update/update_strategy.h"

namespace trib::train_stream {
namespace {

struct Store {
  std::mutex mu;
  std::map<std::string, std::string> values;
  void set(const std::string& k, const std::string& v) {
    std::lock_guard lock(mu);
    values[k] = v;
  }
  std::optional<std::string> get(const std::string& k) {
    std::lock_guard lock(mu);
    auto it = values.find(k);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
};

train::Distribution worker(Store& store, int index, int workers = 2) {
  train::Distribution d;
  d.worker_index = index;
  d.workers = workers;
  d.publish = [&store](const std::string& k, const std::string& v) { store.set(k, v); };
  d.lookup = [&store](const std::string& k) { return store.get(k); };
  return d;
}

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

}  // namespace
}  // namespace trib::train_stream
