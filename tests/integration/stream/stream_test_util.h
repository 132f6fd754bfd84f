// Helpers for the streaming integration tests: a built-in broker per test, events with known
// ids written to it, and sources tuned so that the mock cluster's group protocol is quick.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trib/stream/event_generator.h"
#include "trib/stream/kafka_producer.h"
#include "trib/stream/kafka_source.h"
#include "trib/stream/mock_broker.h"

namespace trib::stream::testing {

using namespace std::chrono_literals;

// The mock cluster waits about session.timeout.ms - 1 s for members to rejoin a rebalance;
// a short session keeps a rebalance to a few seconds.
inline KafkaConfig fast_kafka(const std::string& bootstrap) {
  KafkaConfig c;
  c.bootstrap_servers = bootstrap;
  c.connect_timeout = 5s;
  c.properties = {{"session.timeout.ms", "3000"}, {"heartbeat.interval.ms", "300"}};
  return c;
}

inline KafkaSourceOptions source_options(const std::string& bootstrap, const std::string& topic) {
  KafkaSourceOptions o;
  o.kafka = fast_kafka(bootstrap);
  o.topic = topic;
  o.group_id = topic + ".trainers";
  o.schema = EventGenerator::schema(RecordFormat::json);
  o.join_timeout = 60s;  // the default: a loaded 2-core machine has taken over 15 s to join the mock group
  o.idle_end = 300ms;  // lets a test's loop look at its deadline while the topic is quiet
  return o;
}

// Writes events with ids [first, first + count) to `topic`, spread over its partitions.
inline void produce_events(const std::string& bootstrap, const std::string& topic, std::int64_t first,
                           std::int64_t count, RecordFormat format = RecordFormat::json) {
  KafkaProducer producer(fast_kafka(bootstrap));
  EventGenerator generator({.seed = static_cast<std::uint64_t>(first + 1), .first_id = first});
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  for (std::int64_t i = 0; i < count; ++i) {
    FraudEvent e = generator.next(now + i);
    producer.produce(topic, std::to_string(e.id), EventGenerator::encode(e, format), e.timestamp_ms);
  }
  ASSERT_TRUE(producer.flush(10s));
  ASSERT_EQ(producer.stats().delivered, count);
}

inline std::vector<std::int64_t> ids_of(const data::Batch& batch) {
  auto span = batch.get(KafkaSource::kEventId).span<std::int64_t>();
  return {span.begin(), span.end()};
}

// Reads batches of up to `rows` until `stop(ids so far)` says so or `timeout` passes.
template <typename Stop>
std::vector<std::int64_t> consume_until(KafkaSource& source, Stop stop, std::chrono::milliseconds timeout,
                                        std::int64_t rows = 64) {
  std::vector<std::int64_t> ids;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!stop(ids) && std::chrono::steady_clock::now() < deadline) {
    if (auto batch = source.next(rows)) {
      auto part = ids_of(*batch);
      ids.insert(ids.end(), part.begin(), part.end());
    }
  }
  return ids;
}

// A built-in broker shared by the tests of a suite (starting one is instant, but stopping it
// takes librdkafka's mock cluster a second), with a fresh topic per test.
class StreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { broker_ = std::make_unique<MockBroker>(); }
  static void TearDownTestSuite() { broker_.reset(); }
  static const std::string& bootstrap() { return broker_->bootstrap(); }
  static MockBroker& broker() { return *broker_; }

  // Creates this test's topic, named after the test, and returns its name.
  std::string make_topic(int partitions) {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    broker_->create_topic({name, partitions});
    return name;
  }

 private:
  inline static std::unique_ptr<MockBroker> broker_;
};

// Fails the test, naming ids that are missing or repeated, unless `ids` holds each of
// [0, count) exactly once.
inline void expect_each_once(const std::vector<std::int64_t>& ids, std::int64_t count) {
  std::map<std::int64_t, int> seen;
  for (std::int64_t id : ids) ++seen[id];
  std::vector<std::int64_t> missing, repeated;
  for (std::int64_t id = 0; id < count; ++id) {
    auto it = seen.find(id);
    if (it == seen.end()) missing.push_back(id);
    else if (it->second > 1) repeated.push_back(id);
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(count));
  EXPECT_TRUE(missing.empty()) << missing.size() << " ids missing, the first " << (missing.empty() ? -1 : missing[0]);
  EXPECT_TRUE(repeated.empty()) << repeated.size() << " ids repeated, the first "
                                << (repeated.empty() ? -1 : repeated[0]);
}

}  // namespace trib::stream::testing
