// A dataset source when the workers change (a lost or rejoining allreduce worker): the current
// epoch goes on in its shard, the next one is split among the new count (at an epoch's start,
// that epoch already); a joiner takes up a peer's epoch and cursor in its own shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "trib/data/dataset_source.h"
#include "trib/data/in_memory_dataset.h"
#include "trib/train/dataset_batch_source.h"

namespace trib::train {
namespace {

constexpr char kJob[] = R"(name: reshard
model:
  input: [4]
  classes: 2
  layers: [{type: dense, units: 2}]
data:
  format: csv
  train: {path: unused.csv}
  test: {path: unused.csv}
  shuffle: false
optimizer: {name: sgd, lr: 0.1}
training: {batch: 4, steps: 0, epochs: 1, seed: 3}
)";

config::JobConfig job() { return config::parse_job_config(kJob, "reshard.yaml"); }

// A dataset whose every feature is its example's index.
std::shared_ptr<const data::Dataset> indexed(std::int64_t n) {
  std::vector<float> f;
  std::vector<std::int32_t> l;
  for (std::int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < 4; ++c) f.push_back(static_cast<float>(i));
    l.push_back(static_cast<std::int32_t>(i % 2));
  }
  return std::make_shared<data::InMemoryDataset>(data::InMemoryDataset::from_floats(Shape{4}, f, l));
}

std::vector<std::int64_t> rows(const data::Batch& b) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; r < b.rows(); ++r) out.push_back(static_cast<std::int64_t>(b.features().data<float>()[r * 4]));
  return out;
}

Distribution worker(int index, int count) {
  Distribution d;
  d.worker_index = index;
  d.workers = count;
  return d;
}

struct Quiet {
  std::FILE* f = std::fopen("/dev/null", "w");
  ~Quiet() { std::fclose(f); }
};

// Worker 1 of 3 loses worker 2 mid-epoch: it finishes its 3-way shard of epoch 0, then
// epoch 1 is split in two: worker 1 takes every second example from 1.
TEST(DatasetReshard, TheCurrentEpochEndsInItsShardAndTheNextIsSplitAmongTheNewCount) {
  Quiet quiet;
  Distribution d = worker(1, 3);
  DatasetBatchSource source(indexed(24), job(), d, quiet.f);  // 8 examples, 2 batches per epoch each
  source.start({});
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{1, 4, 7, 10}));
  source.reshard(1, 2);
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{13, 16, 19, 22})) << "epoch 0 goes on in shard 1 of 3";
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{1, 3, 5, 7})) << "epoch 1: shard 1 of 2";
  EXPECT_EQ(source.steps_per_epoch(), 3);
  EXPECT_EQ(source.position()->get_int("epoch"), 1);
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{9, 11, 13, 15}));
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{17, 19, 21, 23}));
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{1, 3, 5, 7})) << "epoch 2 stays in shard 1 of 2";
}

// The group changes twice across an epoch's end: worker 1 of 3 was told to take shard 1 of 2
// from the next epoch, took the last batch of its 3-way epoch 0 (the cursor the rollback keeps),
// then the first of epoch 1 in the new sharding, and that step was rolled back (a joiner
// re-formed the group). Going back to the saved cursor goes back to the 3-way shard it was
// taken in (it failed: "saved with shard=1/3 but this source has shard=1/2"), and the epoch
// after it is again split as the group now says.
TEST(DatasetReshard, ARollbackAcrossAnEpochsReshardGoesBackToTheShardItsCursorWasTakenIn) {
  Quiet quiet;
  Distribution d = worker(1, 3);
  DatasetBatchSource source(indexed(24), job(), d, quiet.f);
  source.start({});
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{1, 4, 7, 10}));
  source.reshard(1, 2);  // mid-epoch: from the next epoch on
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{13, 16, 19, 22}));
  const data::DataPosition end_of_epoch0 = *source.position();
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{1, 3, 5, 7})) << "epoch 1: shard 1 of 2";
  source.resume_at(end_of_epoch0);
  // Back at the end of epoch 0, in its 3-way shard: nothing of epoch 1 read, so the re-formed
  // group's sharding (3 workers again, this one now rank 2) applies at once.
  EXPECT_TRUE(source.at_epoch_start());
  source.reshard(2, 3);
  EXPECT_EQ(source.position()->get("shard"), "2/3 equal");
  EXPECT_EQ(source.position()->get_int("epoch"), 1);
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{2, 5, 8, 11})) << "epoch 1: shard 2 of 3";
  EXPECT_EQ(source.steps_per_epoch(), 2);
}

// A group that changes where an epoch begins (an allreduce group taking a worker in, or letting
// one go, at an epoch boundary): the new sharding applies to that whole epoch, so no example of
// it is left out or read twice; mid-epoch the source is not at an epoch's start.
TEST(DatasetReshard, AtAnEpochsStartTheNewShardingAppliesToThatEpoch) {
  Quiet quiet;
  Distribution d = worker(1, 3);
  DatasetBatchSource source(indexed(24), job(), d, quiet.f);
  source.start({});
  EXPECT_TRUE(source.at_epoch_start());
  source.reshard(1, 2);
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{1, 3, 5, 7})) << "epoch 0 in shard 1 of 2";
  EXPECT_FALSE(source.at_epoch_start());
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{9, 11, 13, 15}));
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{17, 19, 21, 23}));
  EXPECT_TRUE(source.at_epoch_start()) << "epoch 0's last batch is read";
  source.reshard(0, 4);
  EXPECT_EQ(source.position()->get_int("epoch"), 1);
  EXPECT_EQ(rows(*source.next()), (std::vector<std::int64_t>{0, 4, 8, 12})) << "epoch 1 in shard 0 of 4";
}

// A worker beyond the starting ones (an allreduce joiner, index 3 of a job started with 3) has
// a source of its own index's count until the group reshards it, and following a peer that has
// read its whole epoch it starts at the next one.
TEST(DatasetReshard, AJoinerBeyondTheStartingWorkersStartsAtThePeersNextEpoch) {
  Quiet quiet;
  Distribution peer_dist = worker(0, 3);
  DatasetBatchSource peer(indexed(24), job(), peer_dist, quiet.f);
  peer.start({});
  peer.next();
  peer.next();  // the whole of epoch 0 in shard 0 of 3
  Distribution joiner_dist = worker(3, 3);
  DatasetBatchSource joiner(indexed(24), job(), joiner_dist, quiet.f);
  EXPECT_EQ(joiner.steps_per_epoch(), 1) << "6 examples of shard 3 of 4";
  joiner.start({});
  joiner.follow(*peer.position());
  EXPECT_EQ(joiner.position()->get_int("epoch"), 1);
  joiner.reshard(3, 4);
  EXPECT_EQ(rows(*joiner.next()), (std::vector<std::int64_t>{3, 7, 11, 15})) << "epoch 1 in shard 3 of 4";
}

// A relaunched worker 2 of 3 follows worker 0's position: the same epoch and cursor, in shard 2
// (what the lost worker 2 had left of its shard); a position from another sharding gives the
// start of the peer's epoch.
TEST(DatasetReshard, AJoinerFollowsAPeersEpochAndCursorInItsOwnShard) {
  Quiet quiet;
  Distribution peer_dist = worker(0, 3);
  DatasetBatchSource peer(indexed(24), job(), peer_dist, quiet.f);
  peer.start({});
  for (int i = 0; i < 3; ++i) peer.next();  // epoch 1, one batch in
  Distribution joiner_dist = worker(2, 3);
  DatasetBatchSource joiner(indexed(24), job(), joiner_dist, quiet.f);
  joiner.start({});
  joiner.follow(*peer.position());
  EXPECT_EQ(rows(*joiner.next()), (std::vector<std::int64_t>{14, 17, 20, 23})) << "epoch 1, second batch of shard 2";

  Distribution two = worker(0, 2);
  DatasetBatchSource other(indexed(24), job(), two, quiet.f);
  other.start({});
  for (int i = 0; i < 4; ++i) other.next();  // epoch 1 of the 2-way sharding, one batch in
  DatasetBatchSource late(indexed(24), job(), joiner_dist, quiet.f);
  late.start({});
  late.follow(*other.position());
  EXPECT_EQ(late.position()->get_int("epoch"), 1);
  EXPECT_EQ(rows(*late.next()), (std::vector<std::int64_t>{2, 5, 8, 11})) << "the start of epoch 1 in shard 2 of 3";
}

}  // namespace
}  // namespace trib::train
