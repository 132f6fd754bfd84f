// The whole input pipeline of a streaming job, shuffle buffer included, resumes exactly from a
// checkpointed position: the shuffle buffer re-reads its window from Kafka, and the source's
// event-time merge makes the re-read hand out the same records in the same order.
#include <thread>

#include "integration/stream/stream_test_util.h"
#include "trib/data/pipeline.h"

namespace trib::stream {
namespace {

using namespace testing;

class PipelineResumeTest : public StreamTest {};

// A pipeline over a fresh source; next() blocks for records (no idle end), as in training.
data::Pipeline make_pipeline(const std::string& bootstrap, const std::string& topic) {
  KafkaSourceOptions o = source_options(bootstrap, topic);
  o.idle_end.reset();
  return data::Pipeline::from(std::make_unique<KafkaSource>(o)).shuffle_buffer(256, 7).batch(32).prefetch(2).build();
}

std::vector<std::int64_t> take(data::Pipeline& p, int batches) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < batches; ++i) {
    auto batch = p.next();
    if (!batch) break;
    auto part = ids_of(*batch);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

TEST_F(PipelineResumeTest, AShuffledPipelineResumesMidWindowWithoutLossOrRepeat) {
  const std::string cards = make_topic(4);
  // Whole windows: on an unbounded stream, a shuffle window waits until it is full.
  constexpr std::int64_t kEvents = 8 * 256;
  produce_events(bootstrap(), cards, 0, kEvents);

  std::vector<std::int64_t> trained, lost;
  data::DataPosition checkpoint;
  {
    data::Pipeline first = make_pipeline(bootstrap(), cards);
    trained = take(first, 21);  // 672 examples: two full windows and part of a third
    checkpoint = data::DataPosition::parse(first.position().serialize());
    lost = take(first, 5);      // trained after the checkpoint, lost in the crash
  }
  ASSERT_EQ(trained.size(), 21u * 32u);

  data::Pipeline restarted = make_pipeline(bootstrap(), cards);
  restarted.seek(checkpoint);
  // A watchdog, so that a missing record fails the test instead of blocking it.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (auto end = std::chrono::steady_clock::now() + 15s; !done && std::chrono::steady_clock::now() < end;)
      std::this_thread::sleep_for(50ms);
    restarted.interrupt();
  });
  const int remaining_batches = static_cast<int>((kEvents - static_cast<std::int64_t>(trained.size()) + 31) / 32);
  std::vector<std::int64_t> rest = take(restarted, remaining_batches);
  done = true;
  watchdog.join();
  std::vector<std::int64_t> all = trained;
  all.insert(all.end(), rest.begin(), rest.end());
  expect_each_once(all, kEvents);
  // Not only the same records: the same batches as the run that crashed.
  ASSERT_GE(rest.size(), lost.size());
  EXPECT_TRUE(std::equal(lost.begin(), lost.end(), rest.begin()));
}

}  // namespace
}  // namespace trib::stream
