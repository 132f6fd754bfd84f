// KafkaSource::rewind, as a stream job rolled back in place uses it (a lost parameter server
// restored from a checkpoint): the pipeline over the source is torn down (its prefetcher
// interrupts the source), the source rewinds to an applied position saved earlier, and a new
// pipeline over the same source trains exactly what that position does not hold as applied,
// without leaving the consumer group. A rewind after the group moved partitions away keeps no
// claim on them.
#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "integration/stream/stream_test_util.h"
#include "trib/data/pipeline.h"
#include "trib/stream/stream_position.h"

namespace trib::stream {
namespace {

using namespace testing;

class RewindTest : public StreamTest {};

// The pipeline's handle on a source it does not own (as train_stream's KafkaBatchSource has).
class Borrowed final : public data::ExampleSource {
 public:
  explicit Borrowed(KafkaSource& kafka) : kafka_(kafka) {}
  std::optional<data::Batch> next(std::int64_t max_rows) override { return kafka_.next(max_rows); }
  data::DataPosition position() const override { return kafka_.position(); }
  void seek(const data::DataPosition& position) override { kafka_.seek(position); }
  void interrupt() override { kafka_.interrupt(); }

 private:
  KafkaSource& kafka_;
};

data::Pipeline pipeline_over(KafkaSource& kafka) {
  return data::Pipeline::from(std::make_unique<Borrowed>(kafka)).shuffle_buffer(200, 1).batch(32, false).prefetch(2).build();
}

// Pulls batches and reports each applied, until `enough` ids or the stream idles.
std::vector<std::int64_t> train(data::Pipeline& p, KafkaSource& kafka, std::size_t enough) {
  std::vector<std::int64_t> ids;
  for (auto end = std::chrono::steady_clock::now() + 15s; ids.size() < enough && std::chrono::steady_clock::now() < end;) {
    std::optional<data::Batch> b = p.next();
    if (!b) {
      if (!ids.empty()) break;  // the stream went idle after data
      continue;
    }
    auto part = ids_of(*b);
    ids.insert(ids.end(), part.begin(), part.end());
    kafka.applied(*b);
  }
  return ids;
}

TEST_F(RewindTest, ARewoundSourceTrainsWhatFollowsTheSavedPositionOnceAndKeepsItsPartitions) {
  const std::string cards = make_topic(3);
  produce_events(bootstrap(), cards, 0, 1000);
  KafkaSourceOptions o = source_options(bootstrap(), cards);
  o.reports_applied = true;
  KafkaSource kafka(o);
  std::optional<data::Pipeline> p = pipeline_over(kafka);
  const std::vector<std::int64_t> before = train(*p, kafka, 320);  // mid-window: read, not all trained
  ASSERT_EQ(before.size(), 320u);
  const data::DataPosition saved = kafka.applied_position();  // the checkpoint
  train(*p, kafka, 64);  // applied to a model the restore discards
  const KafkaSourceStats at_rewind = kafka.stats();
  EXPECT_GT(at_rewind.unapplied, 0) << "the shuffle buffer and the prefetcher hold records";

  p.reset();  // the prefetcher interrupts the source as it stops
  kafka.rewind(saved, "rewound");
  p = pipeline_over(kafka);
  const std::vector<std::int64_t> after = train(*p, kafka, 1000 - before.size());
  std::vector<std::int64_t> all = before;
  all.insert(all.end(), after.begin(), after.end());
  expect_each_once(all, 1000);
  const KafkaSourceStats end = kafka.stats();
  EXPECT_EQ(end.assignments, at_rewind.assignments) << "no rebalance: the consumer stayed in its group";
  EXPECT_EQ(end.revocations, at_rewind.revocations);
  EXPECT_EQ(kafka.assignment().size(), 3u);
}

// Reads batches directly from the source until `rows` records came out; reports them applied
// when `apply`. Returns the batches' partitions.
std::set<std::int32_t> read(KafkaSource& kafka, std::size_t rows, bool apply) {
  std::set<std::int32_t> partitions;
  std::size_t got = 0;
  for (auto end = std::chrono::steady_clock::now() + 15s; got < rows && std::chrono::steady_clock::now() < end;) {
    std::optional<data::Batch> b = kafka.next(static_cast<std::int64_t>(rows - got));
    if (!b) continue;
    got += static_cast<std::size_t>(b->rows());
    for (std::int32_t p : b->get(KafkaSource::kPartition).span<std::int32_t>()) partitions.insert(p);
    if (apply) kafka.applied(*b);
  }
  EXPECT_EQ(got, rows);
  return partitions;
}

// An allreduce stream job's survivor when the consumer group rebalances before its rewind (a
// lost worker's session timed out): partitions it had records of handed out, not applied,
// moved to another member. Those records never will be applied (the rollback discarded the
// pipeline), and what it applied of them went with the discarded model: after the rewind the
// source claims nothing of them, or the next checkpoint's merge would count them as done.
TEST_F(RewindTest, ARewindDropsClaimsOnPartitionsTheGroupMovedAwayBeforeIt) {
  const std::string cards = make_topic(4);
  produce_events(bootstrap(), cards, 0, 1000);
  KafkaSourceOptions o = source_options(bootstrap(), cards);
  o.reports_applied = true;
  KafkaSource kafka(o);
  ASSERT_EQ(kafka.assignment().size(), 4u);
  read(kafka, 200, true);
  const data::DataPosition saved = kafka.applied_position();  // the checkpoint
  const PartitionProgressMap at_checkpoint = progress_in(saved, cards);
  read(kafka, 100, true);                                           // applied, then rolled back
  ASSERT_EQ(read(kafka, 200, false).size(), 4u) << "every partition has records pending";

  // A second member joins; this one serves the rebalance (its revoke keeps the claims).
  std::atomic<bool> joined{false};
  std::unique_ptr<KafkaSource> other;
  std::thread join([&] {
    other = std::make_unique<KafkaSource>(o);
    joined = true;
  });
  for (auto end = std::chrono::steady_clock::now() + 20s;
       (!joined || kafka.assignment().size() == 4u) && std::chrono::steady_clock::now() < end;)
    kafka.service(10ms);
  join.join();
  const std::vector<std::int32_t> owned = kafka.assignment();
  ASSERT_LT(owned.size(), 4u) << "the group moved no partition";
  ASSERT_FALSE(owned.empty());
  EXPECT_GT(progress_in(kafka.applied_position(), cards).size(), owned.size())
      << "before the rewind, the moved partitions are still claimed (their records are pending)";

  kafka.rewind(saved, "rewound");
  const PartitionProgressMap claims = progress_in(kafka.applied_position(), cards);
  EXPECT_EQ(claims.size(), owned.size());
  for (const auto& [p, progress] : claims) {
    EXPECT_NE(std::find(owned.begin(), owned.end(), p), owned.end())
        << "partition " << p << " moved away before the rewind and is still claimed, next " << progress.next;
    EXPECT_EQ(progress, at_checkpoint.at(p)) << "partition " << p;
  }
}

}  // namespace
}  // namespace trib::stream
