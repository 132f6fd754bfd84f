// Every event is handed out once: across the members of a group, and across a crash and a
// restart from a saved position.
#include <atomic>
#include <mutex>
#include <thread>

#include "integration/stream/stream_test_util.h"
#include "trib/core/error.h"
#include "trib/stream/stream_position.h"

namespace trib::stream {
namespace {

using namespace testing;

class ExactlyOnceTest : public StreamTest {};

TEST_F(ExactlyOnceTest, TwoMembersOfAGroupShareThePartitionsAndSeeEveryEventOnce) {
  const std::string cards = make_topic(4);
  constexpr std::int64_t kEvents = 3000;
  produce_events(bootstrap(), cards, 0, kEvents);

  std::mutex mu;
  std::vector<std::int64_t> all;
  std::vector<std::size_t> per_member(2);
  std::vector<std::vector<std::int32_t>> assignments(2);
  auto member = [&](int index) {
    KafkaSource source(source_options(bootstrap(), cards));
    for (auto deadline = std::chrono::steady_clock::now() + 15s; std::chrono::steady_clock::now() < deadline;) {
      {
        std::lock_guard lock(mu);
        if (all.size() >= kEvents) break;
      }
      if (auto batch = source.next(100)) {
        auto ids = ids_of(*batch);
        std::lock_guard lock(mu);
        all.insert(all.end(), ids.begin(), ids.end());
        per_member[index] += ids.size();
      }
    }
    std::lock_guard lock(mu);
    assignments[index] = source.assignment();
  };
  std::thread a(member, 0), b(member, 1);
  a.join();
  b.join();
  expect_each_once(all, kEvents);
  // Both joined the group before its first assignment, so each got a share.
  EXPECT_GT(per_member[0], 0u);
  EXPECT_GT(per_member[1], 0u);
  EXPECT_EQ(assignments[0].size() + assignments[1].size(), 4u);
}

TEST_F(ExactlyOnceTest, ARestartFromASavedPositionLosesAndRepeatsNothing) {
  const std::string cards = make_topic(3);
  produce_events(bootstrap(), cards, 0, 1000);

  std::vector<std::int64_t> before;
  data::DataPosition saved;
  {
    KafkaSource source(source_options(bootstrap(), cards));
    before = consume_until(source, [](const auto& ids) { return ids.size() >= 400; }, 10s, 50);
    saved = data::DataPosition::parse(source.position().serialize());  // as a checkpoint stores it
    // Work done after the checkpoint is lost in the crash; the source still hands its partitions
    // over at these later offsets when it leaves the group.
    consume_until(source, [](const auto& ids) { return ids.size() >= 200; }, 10s, 50);
  }
  EXPECT_EQ(offsets_of(saved, cards).size(), 3u);
  produce_events(bootstrap(), cards, 1000, 500);

  KafkaSource restarted(source_options(bootstrap(), cards));
  data::DataPosition of_another_topic;
  of_another_topic.set_int("kafka.payments.0", 5);
  EXPECT_THROW(restarted.seek(of_another_topic), InvalidArgument);
  restarted.seek(saved);  // the checkpoint's offsets, not the group's committed ones
  std::vector<std::int64_t> after =
      consume_until(restarted, [&](const auto& ids) { return before.size() + ids.size() >= 1500; }, 10s);
  std::vector<std::int64_t> all = before;
  all.insert(all.end(), after.begin(), after.end());
  expect_each_once(all, 1500);
}

TEST_F(ExactlyOnceTest, CommitPublishesThePositionToTheGroup) {
  const std::string cards = make_topic(2);
  produce_events(bootstrap(), cards, 0, 200);
  data::DataPosition checkpointed;
  {
    KafkaSourceOptions o = source_options(bootstrap(), cards);
    KafkaSource source(o);
    consume_until(source, [](const auto& ids) { return ids.size() >= 120; }, 10s, 40);
    checkpointed = source.position();
    EXPECT_EQ(source.commit(checkpointed), "");
    // Lag follows the position: what is left of the 200 records.
    std::int64_t lag = 0;
    for (const PartitionLag& l : source.lag()) lag += l.lag;
    EXPECT_EQ(lag, 80);
  }
  // A new member of the group with no restored position starts at the committed offsets.
  KafkaSource next(source_options(bootstrap(), cards));
  std::vector<std::int64_t> rest = consume_until(next, [](const auto& ids) { return ids.size() >= 80; }, 10s);
  EXPECT_EQ(rest.size(), 80u);
  EXPECT_EQ(offsets_of(next.position(), cards).size(), 2u);
}

}  // namespace
}  // namespace trib::stream
