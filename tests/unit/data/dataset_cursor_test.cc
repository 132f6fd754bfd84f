// A file job's data cursors, as its parameter servers compare them (dataset_cursor.h): taken
// from the pipeline a file job reads (shuffled, one equal shard, batches, prefetched), a
// cursor kept by a server covers every earlier one of the same worker and none after it, a
// batch read again from an older cursor is the same batch, and cursors of another shard or
// seed, of dynamic chunks, or of nothing, cover nothing.
#include "trib/data/dataset_cursor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trib/core/error.h"
#include "trib/data/pipeline.h"
#include "unit/data/data_test_util.h"

namespace trib::data {
namespace {

using testing::counting_dataset;
using testing::ids;

Pipeline file_job_pipeline(std::int64_t shard, std::uint64_t seed = 7) {
  return Pipeline::from(counting_dataset(50)).shuffle(seed).shard(shard, 3, true).batch(4, true).prefetch(2).build();
}

// The cursor sent with each of the first `n` batches (the position once it is applied), and
// the batches' example ids. 16 examples a shard: 4 batches an epoch, so `n` crosses epochs.
std::vector<std::string> cursors(Pipeline& p, int n, std::vector<std::vector<std::int64_t>>* batches = nullptr) {
  std::vector<std::string> out;
  while (static_cast<int>(out.size()) < n) {
    std::optional<Batch> b = p.next();
    if (!b) continue;  // an epoch's end
    if (batches != nullptr) batches->push_back(ids(*b));
    out.push_back(p.position().serialize());
  }
  return out;
}

TEST(DatasetCursor, AKeptCursorCoversEveryEarlierPushOfTheWorkerAndNoLaterOne) {
  Pipeline p = file_job_pipeline(1);
  const std::vector<std::string> c = cursors(p, 10);
  for (std::size_t kept = 0; kept < c.size(); ++kept)
    for (std::size_t pushed = 0; pushed < c.size(); ++pushed)
      EXPECT_EQ(dataset_cursor_covers(c[kept], c[pushed]), pushed <= kept) << kept << " " << pushed;
  EXPECT_FALSE(dataset_cursor_covers("", c[0])) << "a server that applied no push of the worker";
  EXPECT_EQ(dataset_cursor_merge(c[3], c[4]), c[4]);
  EXPECT_EQ(dataset_cursor_merge("", c[0]), c[0]);
}

// A relaunched worker resumes at the cursor of the slowest server's last applied push: the
// batch it reads next is the one that server lacks, and the next ones follow as before.
TEST(DatasetCursor, ABatchReadAgainFromAnOlderCursorIsTheSameBatch) {
  Pipeline p = file_job_pipeline(2);
  std::vector<std::vector<std::int64_t>> first;
  const std::vector<std::string> c = cursors(p, 9, &first);
  for (int from : {2, 3, 5}) {  // 3: an epoch's last batch; 5: inside the next epoch
    Pipeline again = file_job_pipeline(2);
    again.seek(DataPosition::parse(c[static_cast<std::size_t>(from)]));
    std::vector<std::vector<std::int64_t>> replayed;
    const std::vector<std::string> later = cursors(again, 9 - from - 1, &replayed);
    for (std::size_t i = 0; i < later.size(); ++i) {
      EXPECT_EQ(replayed[i], first[static_cast<std::size_t>(from) + 1 + i]) << "from " << from;
      EXPECT_EQ(later[i], c[static_cast<std::size_t>(from) + 1 + i]);
    }
  }
}

TEST(DatasetCursor, CursorsOfAnotherShardSeedOrKindCoverNothing) {
  Pipeline mine = file_job_pipeline(0), other_shard = file_job_pipeline(1), other_seed = file_job_pipeline(0, 8);
  const std::vector<std::string> c = cursors(mine, 6), s = cursors(other_shard, 2), d = cursors(other_seed, 2);
  EXPECT_FALSE(dataset_cursor_covers(c[5], s[0]));
  EXPECT_FALSE(dataset_cursor_covers(c[5], d[0]));
  // data.assignment: dynamic's cursor names a chunk, not an epoch and cursor.
  DataPosition chunk;
  chunk.set("chunk", "0:1:3:8");
  chunk.set_int("dataset_size", 50);
  EXPECT_FALSE(dataset_cursor_covers(chunk.serialize(), chunk.serialize()));
  EXPECT_FALSE(dataset_cursor_covers(c[5], chunk.serialize()));
}

TEST(DatasetCursor, TextThatIsNotACursorIsRefusedInOneLine) {
  Pipeline p = file_job_pipeline(0);
  const std::vector<std::string> c = cursors(p, 1);
  EXPECT_THROW(dataset_cursor_covers(c[0], "not a cursor"), InvalidArgument);
  EXPECT_THROW(dataset_cursor_covers("not a cursor", c[0]), InvalidArgument);
  EXPECT_THROW(dataset_cursor_merge(c[0], "not a cursor"), InvalidArgument);
  DataPosition bad = DataPosition::parse(c[0]);
  bad.set("cursor", "-4");
  EXPECT_THROW(dataset_cursor_covers(c[0], bad.serialize()), InvalidArgument);
  bad.set("cursor", "x");
  EXPECT_THROW(dataset_cursor_covers(c[0], bad.serialize()), InvalidArgument);
}

}  // namespace
}  // namespace trib::data
