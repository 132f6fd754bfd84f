// Positions derived from applied records: a shuffle buffer and a prefetcher hold records that
// were read but not trained on; a restart from applied_position() reads those again and skips
// the ones applied, whichever worker gets the partition. And the last short batch of an idle
// stream is trained, so a topic of N events trains exactly N.
#include <atomic>
#include <mutex>
#include <thread>

#include "integration/stream/stream_test_util.h"
#include "trib/core/error.h"
#include "trib/data/pipeline.h"
#include "trib/stream/stream_position.h"

namespace trib::stream {
namespace {

using namespace testing;

class AppliedPositionTest : public StreamTest {};

// A source behind a shuffle buffer, batches not dropped at the end, prefetched: the stream
// pipeline of a trainer.
struct Trainer {
  KafkaSource* kafka = nullptr;
  data::Pipeline pipeline;
};

Trainer trainer(KafkaSourceOptions o, std::uint64_t seed, std::int64_t window = 200, std::int64_t batch = 32) {
  o.reports_applied = true;
  auto source = std::make_unique<KafkaSource>(o);
  KafkaSource* kafka = source.get();
  return {kafka, data::Pipeline::from(std::move(source)).shuffle_buffer(window, seed).batch(batch, false).prefetch(2).build()};
}

// Pulls batches and reports each applied, until `enough` ids or the stream idles.
std::vector<std::int64_t> train(Trainer& t, std::size_t enough, std::chrono::milliseconds timeout = 15s) {
  std::vector<std::int64_t> ids;
  for (auto end = std::chrono::steady_clock::now() + timeout; ids.size() < enough && std::chrono::steady_clock::now() < end;) {
    std::optional<data::Batch> b = t.pipeline.next();
    if (!b) {
      if (!ids.empty()) break;  // the stream went idle after data
      continue;
    }
    auto part = ids_of(*b);
    ids.insert(ids.end(), part.begin(), part.end());
    t.kafka->applied(*b);
  }
  return ids;
}

TEST_F(AppliedPositionTest, ARestartTrainsWhatTheShuffleBufferHeldAndNothingTwice) {
  const std::string cards = make_topic(3);
  produce_events(bootstrap(), cards, 0, 1000);
  std::vector<std::int64_t> before;
  data::DataPosition saved;
  {
    Trainer t = trainer(source_options(bootstrap(), cards), 1);
    before = train(t, 320);  // mid-window: the buffer holds read records not trained
    ASSERT_EQ(before.size(), 320u);
    saved = data::DataPosition::parse(t.kafka->applied_position().serialize());
    PartitionProgressMap progress = progress_in(saved, cards);
    ASSERT_EQ(progress.size(), 3u);
    std::int64_t above = 0;
    for (const auto& [p, pp] : progress) above += pp.applied.count();
    EXPECT_GT(above, 0) << "shuffled: some applied records lie above a low watermark";
    EXPECT_GT(t.kafka->stats().unapplied, 0);
    // Work after the "checkpoint" is lost in the crash.
    train(t, 64);
  }
  Trainer restarted = trainer(source_options(bootstrap(), cards), 2);
  restarted.kafka->seek(saved);
  std::vector<std::int64_t> after = train(restarted, 1000 - before.size());
  std::vector<std::int64_t> all = before;
  all.insert(all.end(), after.begin(), after.end());
  expect_each_once(all, 1000);
}

// The cursor a worker sends with a batch's update (applied_position_after) is, exactly, the
// applied position once that batch is applied, and does not change the source before: a
// parameter server that kept the cursor of a worker's last accepted push resumes its
// partitions there with nothing trained twice or lost.
TEST_F(AppliedPositionTest, TheCursorSentWithABatchIsTheAppliedPositionOnceItIsApplied) {
  const std::string cards = make_topic(3);
  produce_events(bootstrap(), cards, 0, 600);
  std::vector<std::int64_t> kept;
  data::DataPosition cursor;
  {
    Trainer t = trainer(source_options(bootstrap(), cards), 3);
    kept = train(t, 256);  // mid-window: a shuffle buffer scatters the applied offsets
    ASSERT_EQ(kept.size(), 256u);
    std::optional<data::Batch> b = t.pipeline.next();
    ASSERT_TRUE(b.has_value());
    const data::DataPosition before = t.kafka->applied_position();
    cursor = data::DataPosition::parse(t.kafka->applied_position_after(*b).serialize());
    EXPECT_EQ(t.kafka->applied_position(), before) << "the cursor is computed on a copy";
    EXPECT_NE(cursor, before);
    t.kafka->applied(*b);
    EXPECT_EQ(t.kafka->applied_position(), cursor);
    auto ids = ids_of(*b);
    kept.insert(kept.end(), ids.begin(), ids.end());
    train(t, 64);  // trained, never accepted: lost with the worker
  }
  Trainer relaunched = trainer(source_options(bootstrap(), cards), 4);
  relaunched.kafka->seek(cursor);
  std::vector<std::int64_t> after = train(relaunched, 600 - kept.size());
  kept.insert(kept.end(), after.begin(), after.end());
  expect_each_once(kept, 600);
}

// Two workers save their claims, merged per partition; the restarted job has one worker,
// which gets every partition.
TEST_F(AppliedPositionTest, ClaimsOfTwoWorkersRestoreOnOneWorker) {
  const std::string cards = make_topic(4);
  produce_events(bootstrap(), cards, 0, 2000);
  std::mutex mu;
  std::vector<std::int64_t> before;
  std::vector<data::DataPosition> claims(2);
  std::atomic<int> split{0}, trained{0};
  auto worker = [&](int index) {
    Trainer t = trainer(source_options(bootstrap(), cards), 10 + index, 128, 16);
    // Both wait until each holds two partitions, as a trainer's start barrier does: a loaded
    // machine can take several rebalances to split them (the mock coordinator refuses a
    // follower's SyncGroup that arrives after the leader's, and the follower joins again), and
    // a worker that trained and left meanwhile would leave the other all four.
    bool counted = false;
    for (auto end = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < end;) {
      t.kafka->service(10ms);
      if (!counted && t.kafka->assignment().size() == 2) counted = (++split, true);
      if (split.load() == 2) break;
    }
    EXPECT_EQ(t.kafka->assignment().size(), 2u) << "worker " << index << ": the group did not split the 4 partitions";
    std::vector<std::int64_t> ids = train(t, 400);
    {
      std::lock_guard lock(mu);
      claims[index] = t.kafka->applied_position();
      before.insert(before.end(), ids.begin(), ids.end());
    }
    // Neither leaves the group before both have taken their claims: a leaver's partitions would
    // move to the other, which would read them on.
    ++trained;
    for (auto end = std::chrono::steady_clock::now() + 60s; trained.load() < 2 && std::chrono::steady_clock::now() < end;)
      std::this_thread::sleep_for(10ms);
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  data::DataPosition merged = claims[0];
  merge_claims(merged, claims[1]);
  ASSERT_EQ(progress_in(merged, cards).size(), 4u);
  KafkaSourceOptions o = source_options(bootstrap(), cards);
  o.group_id += ".resumed";
  Trainer resumed = trainer(o, 3);
  resumed.kafka->seek(merged);
  std::vector<std::int64_t> after = train(resumed, 2000 - before.size());
  std::vector<std::int64_t> all = before;
  all.insert(all.end(), after.begin(), after.end());
  expect_each_once(all, 2000);
}

TEST_F(AppliedPositionTest, AnIdleStreamTrainsItsLastShortBatchAndCommitsNoFurther) {
  const std::string cards = make_topic(2);
  produce_events(bootstrap(), cards, 0, 1000);  // not a multiple of the batch
  KafkaSourceOptions o = source_options(bootstrap(), cards);
  o.idle_end = 1s;
  data::DataPosition final_position;
  {
    Trainer t = trainer(o, 4, 128, 64);
    std::vector<std::int64_t> ids;
    std::int64_t last_rows = 0;
    for (auto end = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < end;) {
      std::optional<data::Batch> b = t.pipeline.next();
      if (!b) break;
      auto part = ids_of(*b);
      ids.insert(ids.end(), part.begin(), part.end());
      last_rows = b->rows();
      t.kafka->applied(*b);
    }
    expect_each_once(ids, 1000);
    EXPECT_EQ(last_rows, 1000 % 64);
    final_position = t.kafka->applied_position();
    EXPECT_EQ(t.kafka->commit(final_position), "");
    std::int64_t total = 0;
    for (const auto& [p, pp] : progress_in(final_position, cards)) {
      EXPECT_TRUE(pp.applied.empty());
      total += pp.next;
    }
    EXPECT_EQ(total, 1000);
  }
  // Produced after the job ended: the group's next member starts right after the last one
  // applied.
  produce_events(bootstrap(), cards, 1000, 100);
  Trainer next = trainer(o, 5, 128, 64);
  std::vector<std::int64_t> rest = train(next, 100);
  std::sort(rest.begin(), rest.end());
  ASSERT_EQ(rest.size(), 100u);
  EXPECT_EQ(rest.front(), 1000);
}

// Records handed out but never applied (read ahead by the prefetcher, held by the shuffle
// buffer) are not committed by a closing source: the group's next member reads them.
TEST_F(AppliedPositionTest, AClosingSourceCommitsOnlyWhatWasApplied) {
  const std::string cards = make_topic(2);
  produce_events(bootstrap(), cards, 0, 600);
  std::vector<std::int64_t> before;
  {
    Trainer t = trainer(source_options(bootstrap(), cards), 6, 200, 32);
    before = train(t, 96);
    ASSERT_EQ(before.size(), 96u);
  }
  Trainer next = trainer(source_options(bootstrap(), cards), 7, 200, 32);
  std::vector<std::int64_t> after = train(next, 600);
  std::vector<std::int64_t> all = before;
  // Applied records above a low watermark are read again by a group member (a commit holds
  // one offset per partition): the commit is at-least-once, the checkpoint exact.
  std::set<std::int64_t> distinct(after.begin(), after.end());
  distinct.insert(before.begin(), before.end());
  EXPECT_EQ(distinct.size(), 600u) << "nothing the first member did not apply is skipped";
}

}  // namespace
}  // namespace trib::stream
