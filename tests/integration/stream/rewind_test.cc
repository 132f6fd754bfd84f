// KafkaSource::rewind, as a stream job rolled back in place uses it (a lost parameter server
// restored from a checkpoint): the pipeline over the source is torn down (its prefetcher
// interrupts the source), the source rewinds to an applied position saved earlier, and a new
// pipeline over the same source trains exactly what that position does not hold as applied,
// without leaving the consumer group.
#include <optional>

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

}  // namespace
}  // namespace trib::stream
