// Taking a departed parameter-server worker's share back (train_stream/stream_sync.h,
// stream_returns.cc): a departure stands in for the worker at the barriers until the chief
// admits the joiner, the hand-overs keep every partition claimed in between, and the same
// index can leave again afterwards. Workers are threads sharing an in-memory store.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <thread>

#include "train_stream/stream_sync.h"
#include "trib/stream/stream_position.h"
#include "unit/train_stream/memory_store.h"

namespace trib::train_stream {
namespace {

using testing::Store;
using testing::worker;

constexpr auto kShort = std::chrono::seconds(20);

data::DataPosition at(std::map<std::int32_t, std::int64_t> offsets) {
  data::DataPosition p;
  stream::set_offsets(p, "t", offsets);
  return p;
}

stream::PartitionOffsets offsets(const std::optional<data::DataPosition>& p) {
  return p ? stream::offsets_of(*p, "t") : stream::PartitionOffsets{};
}

// The chief's gather of checkpoint `step` with worker 1's `offer`; worker 2 offers nothing.
std::optional<data::DataPosition> checkpoint(StreamSync& chief, StreamSync& one, std::int64_t step,
                                             const data::DataPosition& own, const data::DataPosition& offer) {
  auto offered = std::async(std::launch::async, [&] { return one.offer(step, offer); });
  std::optional<data::DataPosition> merged = chief.gather(step, own);
  chief.published(step, true);
  EXPECT_TRUE(offered.get());
  return merged;
}

TEST(StreamSyncReturn, TheDepartureStandsUntilTheJoinerIsAdmittedAndTheHandOversKeepEveryPartitionClaimed) {
  Store store;
  const train::Distribution d0 = worker(store, 0, 3), d1 = worker(store, 1, 3), d2 = worker(store, 2, 3);
  StreamSync chief(d0, kShort), one(d1, kShort), two(d2, kShort);
  // Worker 2 leaves with partitions 2 and 5 at 50 and 40; 0 and 1 adopt them.
  two.leave(at({{2, 50}, {5, 40}}));
  EXPECT_EQ(chief.departures(2), 1);
  EXPECT_EQ(offsets(chief.departed(2)), (stream::PartitionOffsets{{2, 50}, {5, 40}}));
  EXPECT_EQ(offsets(checkpoint(chief, one, 100, at({{0, 9}, {2, 60}}), at({{1, 8}, {5, 45}}))),
            (stream::PartitionOffsets{{0, 9}, {1, 8}, {2, 60}, {5, 45}}));

  // A worker 2 again takes departure 1 back: its claim no longer counts as a departure.
  StreamSync joiner(d2, kShort);
  joiner.publish_return(joiner.departures(2));
  EXPECT_FALSE(chief.departed(2));
  // Both hand over; their offers no longer hold 2 and 5, and the joiner reads nothing yet: the
  // barrier takes its departure claim (waiting for nobody) with the hand-overs merged.
  EXPECT_TRUE(chief.hand_over(2, 1, {.step = 150, .claim = at({{2, 80}})}));
  EXPECT_TRUE(one.hand_over(2, 1, {.step = 152, .claim = at({{5, 70}})}));
  EXPECT_FALSE(one.hand_over(2, 1, {.step = 160, .claim = {}})) << "once per return: a relaunch must not overwrite it";
  EXPECT_EQ(offsets(checkpoint(chief, one, 200, at({{0, 19}}), at({{1, 18}}))),
            (stream::PartitionOffsets{{0, 19}, {1, 18}, {2, 80}, {5, 70}}));

  // What a relaunch of the joiner resumes from, where it pushed nothing since.
  EXPECT_EQ(offsets(chief.taken_back(2)), (stream::PartitionOffsets{{2, 80}, {5, 70}}));
  EXPECT_FALSE(chief.taken_back(1)) << "worker 1 never left";
  const std::optional<std::map<int, StreamSync::HandOver>> got = joiner.await_hand_overs(1);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ(got->at(1).step, 152);
  EXPECT_EQ(offsets(got->at(1).claim), (stream::PartitionOffsets{{5, 70}}));
  auto admitted = std::async(std::launch::async, [&] { return joiner.await_admission(1); });
  for (int i = 0; i < 1000 && chief.admit_ready(250).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(admitted.get(), 250);
  EXPECT_TRUE(chief.admit_ready(260).empty()) << "admitted once";
  // Up to the admission step the departure still stands in for it.
  EXPECT_EQ(offsets(checkpoint(chief, one, 250, at({{0, 25}}), at({{1, 24}}))),
            (stream::PartitionOffsets{{0, 25}, {1, 24}, {2, 80}, {5, 70}}));
  // After it, the barrier waits for the joiner's own offer.
  auto offered = std::async(std::launch::async, [&] { return one.offer(300, at({{1, 30}})); });
  auto gathered = std::async(std::launch::async, [&] { return chief.gather(300, at({{0, 31}})); });
  EXPECT_EQ(gathered.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "an admitted joiner's departure claim was taken for its offer";
  auto own = std::async(std::launch::async, [&] { return joiner.offer(300, at({{2, 95}, {5, 77}})); });
  EXPECT_EQ(offsets(gathered.get()), (stream::PartitionOffsets{{0, 31}, {1, 30}, {2, 95}, {5, 77}}));
  chief.published(300, true);
  EXPECT_TRUE(offered.get());
  EXPECT_TRUE(own.get());

  // It leaves again: departure 2 stands again, with its new claim.
  joiner.leave(at({{2, 99}, {5, 88}}));
  EXPECT_EQ(chief.departures(2), 2);
  EXPECT_EQ(offsets(chief.departed(2)), (stream::PartitionOffsets{{2, 99}, {5, 88}}));
  EXPECT_FALSE(chief.taken_back(2)) << "gone again";
  EXPECT_EQ(offsets(checkpoint(chief, one, 400, at({{0, 40}}), at({{1, 41}}))),
            (stream::PartitionOffsets{{0, 40}, {1, 41}, {2, 99}, {5, 88}}));
}

TEST(StreamSyncReturn, AJoinerWaitsOnlyForPresentWorkersAndGivesWayWhenTheJobEnds) {
  Store store;
  const train::Distribution d0 = worker(store, 0, 4), d1 = worker(store, 1, 4), d2 = worker(store, 2, 4),
                            d3 = worker(store, 3, 4);
  StreamSync chief(d0, kShort), one(d1, kShort), two(d2, kShort), three(d3, kShort);
  two.leave(at({{2, 5}}));
  three.leave(at({{3, 6}}));
  StreamSync joiner(d2, kShort);
  joiner.publish_return(1);
  chief.hand_over(2, 1, {.step = 10, .claim = {}});
  one.hand_over(2, 1, {.step = 11, .claim = at({{2, 7}})});
  // Worker 3 is gone too: nobody waits for its hand-over.
  const std::optional<std::map<int, StreamSync::HandOver>> got = joiner.await_hand_overs(1);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), 2u);

  // Another return whose hand-overs never all come: the chief's end releases the joiner.
  StreamSync again(d3, kShort);
  again.publish_return(1);
  chief.ending();
  EXPECT_FALSE(again.await_hand_overs(1));
  EXPECT_FALSE(again.await_admission(1));
}

}  // namespace
}  // namespace trib::train_stream
