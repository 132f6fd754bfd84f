// A second member joins the group while events flow: partitions move to it, and the hand-over
// (commit at the position, buffered records dropped) loses and repeats nothing.
#include <atomic>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>

#include "integration/stream/stream_test_util.h"
#include "trib/core/error.h"
#include "trib/stream/event_producer.h"

namespace trib::stream {
namespace {

using namespace testing;

class RebalanceTest : public StreamTest {};

TEST_F(RebalanceTest, ASecondMemberJoiningMidStreamTakesPartitionsWithoutLossOrRepeat) {
  const std::string cards = make_topic(4);
  const auto deadline = std::chrono::steady_clock::now() + 18s;
  // Events flow until the second member has consumed some: however long its join takes.
  std::atomic<bool> stop_producing{false};
  std::atomic<std::int64_t> produced{-1};  // known once the producer has stopped
  std::thread producer([&] {
    ProduceOptions o;
    o.kafka = fast_kafka(bootstrap());
    o.topic = cards;
    o.key = "id";
    o.rate = 500;
    const ProduceReport report = produce_events(o, stop_producing);
    EXPECT_EQ(report.delivered, report.produced) << report.last_error;
    produced = report.produced;
  });

  std::mutex mu;
  std::vector<std::int64_t> all;
  std::int64_t from_second = 0;
  KafkaSourceStats first_stats;
  auto done = [&] {
    std::lock_guard lock(mu);
    return produced >= 0 && static_cast<std::int64_t>(all.size()) >= produced;
  };
  auto consume = [&](KafkaSource& source, bool second) {
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      if (auto batch = source.next(20)) {
        auto ids = ids_of(*batch);
        std::lock_guard lock(mu);
        all.insert(all.end(), ids.begin(), ids.end());
        if (second) from_second += static_cast<std::int64_t>(ids.size());
      }
    }
  };
  std::thread first([&] {
    KafkaSource source(source_options(bootstrap(), cards));
    EXPECT_EQ(source.assignment().size(), 4u);
    consume(source, false);
    first_stats = source.stats();
  });
  // Mid-stream: once the first member, alone in the group, has handed out some events.
  auto wait_for = [&](auto condition) {
    while (!condition() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  };
  wait_for([&] {
    std::lock_guard lock(mu);
    return all.size() >= 300;
  });
  std::thread second([&] {
    KafkaSource source(source_options(bootstrap(), cards));
    consume(source, true);
  });
  wait_for([&] {
    std::lock_guard lock(mu);
    return from_second >= 200;
  });
  stop_producing = true;
  producer.join();
  first.join();
  second.join();

  ASSERT_GT(produced, 0);
  expect_each_once(all, produced);
  EXPECT_GE(from_second, 200) << "partitions did not move to the second member in time";
  EXPECT_GE(first_stats.revocations, 1);
  EXPECT_EQ(first_stats.handoff_failures, 0) << first_stats.last_error;
}

// A hand-over commit the coordinator refuses (a rebalance already under way: the mock cluster
// refuses commits while its group joins, docs/kafka_mock_coordinator.md) is counted and named,
// so that the job can say its partitions' next owners start at an older position.
TEST_F(RebalanceTest, AHandOverTheGroupRefusesIsCountedAndNamed) {
  const std::string cards = make_topic(4);
  produce_events(bootstrap(), cards, 0, 400);
  KafkaSource first(source_options(bootstrap(), cards));
  ASSERT_EQ(first.assignment().size(), 4u);
  const std::vector<std::int64_t> read = consume_until(first, [](const auto& ids) { return ids.size() >= 100; }, 10s, 20);
  ASSERT_GE(read.size(), 100u);
  broker().refuse_next_commits(1);
  // The first member is serviced all along, on this thread: the group moves on only while
  // both members poll (a follower's sync that the mock answers late takes another round, and
  // a leave another rebalance), so neither may wait for the other with the first unpolled.
  std::atomic<bool> holds_two{false}, release{false}, left{false};
  std::string second_error;
  std::thread second([&] {
    try {
      KafkaSource source(source_options(bootstrap(), cards));
      // Stays in the group until it holds the two partitions the first gave up, and then until
      // the first's state was read.
      for (auto end = std::chrono::steady_clock::now() + 60s; !release && std::chrono::steady_clock::now() < end;) {
        source.service(10ms);
        if (source.assignment().size() == 2u) holds_two = true;
      }
    } catch (const Error& e) {
      second_error = e.what();  // read after the join
    }
    left = true;
  });
  std::size_t first_holds = 4;
  for (auto end = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < end;) {
    first.service(10ms);
    first_holds = first.assignment().size();
    if (first_holds == 2u && holds_two) break;
  }
  const KafkaSourceStats stats = first.stats();
  release = true;
  while (!left) first.service(10ms);  // the second's leave is a rebalance too
  second.join();
  EXPECT_TRUE(holds_two.load()) << "the second member never held two partitions: " << second_error;
  EXPECT_EQ(first_holds, 2u);
  EXPECT_EQ(stats.handoff_failures, 1) << stats.last_error;
  EXPECT_THAT(stats.last_error, ::testing::HasSubstr("hand-over commit"));
  EXPECT_THAT(stats.last_error, ::testing::HasSubstr("rebalance"));
}

}  // namespace
}  // namespace trib::stream
