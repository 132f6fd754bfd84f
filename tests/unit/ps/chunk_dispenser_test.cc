// Parameter server 0 hands out the data in chunks (data.assignment: dynamic): whoever reads,
// every batch of the job is applied exactly once, including the unread part of a departed
// worker's chunk.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "ps/chunk_dispenser.h"
#include "trib/core/error.h"

namespace trib::ps {
namespace {

// A worker of the simulation: its granted chunks, read one batch at a time; a batch read is
// applied (reported) only after its step, so a worker lost in between leaves it unapplied.
struct SimWorker {
  std::vector<Chunk> chunks;
  std::optional<std::pair<Chunk, std::int64_t>> read;  // the batch read, not yet applied
  bool gone = false, done = false;
};

using Applied = std::map<std::pair<std::int64_t, std::int64_t>, int>;  // (epoch, batch) -> times applied

// One step of worker `w`: apply the batch it read, then read the next (claiming when needed).
void step(ChunkDispenser& d, const ChunkPlan& plan, int w, SimWorker& s, Applied& applied) {
  if (s.read) {
    auto [c, b] = *s.read;
    applied[{c.epoch, b}]++;
    d.progress(w, c.epoch, c.index, b + 1);
    s.read.reset();
  }
  while (!s.chunks.empty() && s.chunks.front().begin == s.chunks.front().end) s.chunks.erase(s.chunks.begin());
  if (s.chunks.empty()) {
    std::vector<Chunk> got;
    const ChunkDispenser::Answer a = d.grant(w, plan, 1, got);
    if (a == ChunkDispenser::Answer::exhausted) s.done = true;
    s.chunks = got;
    if (s.chunks.empty()) return;
  }
  Chunk& c = s.chunks.front();
  s.read = std::make_pair(c, c.begin);
  ++c.begin;
}

TEST(ChunkDispenser, EveryBatchIsAppliedOnceWhenAWorkerIsLostMidChunk) {
  const ChunkPlan plan{/*batches_per_epoch=*/37, /*chunk_batches=*/4, /*total_batches=*/37 * 3};
  ChunkDispenser d;
  std::vector<SimWorker> w(3);
  Applied applied;
  std::mt19937 rng(7);
  for (int tick = 0; tick < 10000; ++tick) {
    const int i = static_cast<int>(rng() % 3);
    if (w[i].gone || w[i].done) continue;
    step(d, plan, i, w[i], applied);
    if (tick == 40) {
      // Worker 2 is lost holding a chunk it has partly read, and a batch read but not applied.
      ASSERT_TRUE(w[2].read.has_value());
      w[2].gone = true;
      EXPECT_GT(d.release(2), 0) << "its unread batches go back";
    }
    if (w[0].done && w[1].done) break;
  }
  ASSERT_TRUE(w[0].done && w[1].done);
  EXPECT_EQ(static_cast<std::int64_t>(applied.size()), plan.total_batches) << "no batch left out";
  for (const auto& [batch, times] : applied) EXPECT_EQ(times, 1) << "epoch " << batch.first << " batch " << batch.second;
  EXPECT_EQ(d.applied_batches(), plan.total_batches);
  for (std::int64_t e = 0; e < 3; ++e)
    for (std::int64_t b = 0; b < 37; ++b) EXPECT_TRUE(applied.contains({e, b})) << e << "/" << b;
}

TEST(ChunkDispenser, AJoinerReadsFreshChunksAndTheJobEndsAtItsBatchCount) {
  const ChunkPlan plan{10, 4, 25};  // 2.5 epochs
  ChunkDispenser d;
  std::vector<SimWorker> w(3);
  Applied applied;
  for (int round = 0; round < 100; ++round)
    for (int i = 0; i < (round < 3 ? 2 : 3); ++i)  // worker 2 joins at round 3
      if (!w[i].done) step(d, plan, i, w[i], applied);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(w[i].done) << i;
  EXPECT_EQ(static_cast<std::int64_t>(applied.size()), 25);
  for (const auto& [batch, times] : applied) EXPECT_EQ(times, 1);
  EXPECT_TRUE(applied.contains({2, 4}) && !applied.contains({2, 5})) << "the job's last batch is epoch 2's fifth";
}

TEST(ChunkDispenser, WaitsWhileAnotherWorkerHoldsAChunkThatMayComeBack) {
  const ChunkPlan plan{4, 4, 4};
  ChunkDispenser d;
  std::vector<Chunk> got;
  ASSERT_EQ(d.grant(0, plan, 1, got), ChunkDispenser::Answer::granted);
  got.clear();
  EXPECT_EQ(d.grant(1, plan, 1, got), ChunkDispenser::Answer::wait);
  d.progress(0, 0, 0, 2);
  d.release(0);  // lost after two batches
  ASSERT_EQ(d.grant(1, plan, 1, got), ChunkDispenser::Answer::granted);
  EXPECT_EQ(got[0], (Chunk{0, 0, 2, 4})) << "the unread part, from the last applied push's cursor";
  d.progress(1, 0, 0, 4);
  got.clear();
  EXPECT_EQ(d.grant(1, plan, 1, got), ChunkDispenser::Answer::exhausted);
  EXPECT_EQ(d.applied_batches(), 4);
}

// Workers that step together (sync, bounded, averaging) never wait for another's chunk: the
// holder's round would wait for them in turn.
TEST(ChunkDispenser, WorkersThatMayNotWaitAreToldTheDataIsExhausted) {
  const ChunkPlan plan{4, 4, 4};
  ChunkDispenser d;
  std::vector<Chunk> got;
  ASSERT_EQ(d.grant(0, plan, 1, got, /*may_wait=*/false), ChunkDispenser::Answer::granted);
  got.clear();
  EXPECT_EQ(d.grant(1, plan, 1, got, /*may_wait=*/false), ChunkDispenser::Answer::exhausted);
}

TEST(ChunkDispenser, AResumedRunStartsAtTheChunkItsCheckpointReached) {
  const ChunkPlan plan{10, 4, 30};
  ChunkDispenser d;
  std::vector<Chunk> got;
  ASSERT_EQ(d.grant(0, plan, 1, got, true, /*first_batch=*/15), ChunkDispenser::Answer::granted);
  EXPECT_EQ(got[0], (Chunk{1, 1, 4, 8})) << "batch 15 is epoch 1's sixth, in its chunk 1";
  EXPECT_EQ(d.applied_batches(), 14) << "what came before counts as read";
  got.clear();
  d.grant(1, plan, 5, got, true, /*first_batch=*/0);
  EXPECT_EQ(got.front(), (Chunk{1, 2, 8, 10})) << "only the first claim places the start";
}

TEST(ChunkDispenser, IgnoresProgressOnChunksAWorkerDoesNotHold) {
  const ChunkPlan plan{8, 4, 8};
  ChunkDispenser d;
  std::vector<Chunk> got;
  d.grant(0, plan, 1, got);
  d.release(0);
  d.progress(0, 0, 0, 4);  // the old process's late cursor
  got.clear();
  d.grant(1, plan, 1, got);
  EXPECT_EQ(got[0], (Chunk{0, 0, 0, 4})) << "nothing was applied from it";
  EXPECT_EQ(d.applied_batches(), 0);
}

TEST(ChunkDispenser, RefusesAClaimPlanningOtherData) {
  ChunkDispenser d;
  std::vector<Chunk> got;
  d.grant(0, {10, 4, 20}, 1, got);
  EXPECT_THROW(d.grant(1, {11, 4, 22}, 1, got), InvalidArgument);
  EXPECT_THROW(d.grant(1, {0, 4, 22}, 1, got), InvalidArgument);
}

TEST(ChunkDispenser, ChunkFieldRoundTripsAndRejectsJunk) {
  Chunk c;
  std::int64_t next = 0;
  ASSERT_TRUE(parse_chunk_field(chunk_field(Chunk{3, 5, 0, 44}, 41), c, next));
  EXPECT_EQ(c.epoch, 3);
  EXPECT_EQ(c.index, 5);
  EXPECT_EQ(c.end, 44);
  EXPECT_EQ(next, 41);
  for (const char* bad : {"", "1:2:3", "1:2:3:4x", "1:2:5:4", "-1:0:0:1", "a:b:c:d"})
    EXPECT_FALSE(parse_chunk_field(bad, c, next)) << bad;
}

}  // namespace
}  // namespace trib::ps
