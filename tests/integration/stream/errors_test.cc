// Bad input gets one clear error naming the thing, within the configured timeout.
#include "integration/stream/stream_test_util.h"
#include "trib/core/error.h"
#include "trib/stream/event_producer.h"

namespace trib::stream {
namespace {

using namespace testing;

class StreamErrorsTest : public StreamTest {};

template <typename Error, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

TEST_F(StreamErrorsTest, AnUnreachableBrokerIsReportedWithItsAddressWithinTheTimeout) {
  KafkaSourceOptions o = source_options("127.0.0.1:1", "cards");
  o.kafka.connect_timeout = 1s;
  const auto start = std::chrono::steady_clock::now();
  std::string message = error_of<Unavailable>([&] { KafkaSource source(o); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_NE(message.find("Kafka broker at 127.0.0.1:1 unreachable"), std::string::npos) << message;

  ProduceOptions p;
  p.kafka = o.kafka;
  p.topic = "cards";
  std::atomic<bool> stop{false};
  message = error_of<Unavailable>([&] { produce_events(p, stop); });
  EXPECT_NE(message.find("127.0.0.1:1"), std::string::npos) << message;
}

TEST_F(StreamErrorsTest, AMissingTopicIsNamedWithTheTopicsThatExist) {
  const std::string cards = make_topic(2);
  std::string message = error_of<NotFound>([&] { KafkaSource source(source_options(bootstrap(), "payments")); });
  EXPECT_NE(message.find("Kafka topic 'payments' does not exist at " + bootstrap()), std::string::npos)
      << message;
  EXPECT_NE(message.find(cards), std::string::npos) << message;
}

TEST_F(StreamErrorsTest, BadOptionsAreRejectedBeforeConnecting) {
  KafkaSourceOptions o = source_options("127.0.0.1:1", "cards");
  o.group_id.clear();
  EXPECT_NE(error_of<InvalidArgument>([&] { KafkaSource s(o); }).find("group_id is empty"), std::string::npos);
  o = source_options("127.0.0.1:1", "bad topic!");
  EXPECT_NE(error_of<InvalidArgument>([&] { KafkaSource s(o); }).find("'bad topic!'"), std::string::npos);
  o = source_options("", "cards");
  EXPECT_NE(error_of<InvalidArgument>([&] { KafkaSource s(o); }).find("bootstrap_servers is empty"),
            std::string::npos);
  o = source_options("127.0.0.1:1", "cards");
  o.kafka.properties["no.such.property"] = "1";
  EXPECT_NE(error_of<InvalidArgument>([&] { KafkaSource s(o); }).find("'no.such.property'"), std::string::npos);
}

}  // namespace
}  // namespace trib::stream
