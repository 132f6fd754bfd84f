// The built-in broker is a real Kafka endpoint: an external client lists and reads it.
#include "integration/stream/kcat.h"
#include "integration/stream/stream_test_util.h"
#include "trib/core/error.h"

namespace trib::stream {
namespace {

using namespace testing;

TEST(MockBrokerTest, KcatListsItsTopicsAndReadsWhatWasProduced) {
  TRIB_REQUIRE_KCAT();
  MockBroker broker({.topics = {{"cards", 3}}});
  broker.create_topic({"alerts", 1});
  const std::string listing = run_kcat("-b " + broker.bootstrap() + " -L");
  EXPECT_NE(listing.find("topic \"cards\" with 3 partitions"), std::string::npos) << listing;
  EXPECT_NE(listing.find("topic \"alerts\" with 1 partitions"), std::string::npos) << listing;

  produce_events(broker.bootstrap(), "cards", 0, 10);
  const std::string records = run_kcat("-C -b " + broker.bootstrap() + " -t cards -e -o beginning -q");
  EXPECT_EQ(std::count(records.begin(), records.end(), '\n'), 10) << records;
}

TEST(MockBrokerTest, RejectsBadTopics) {
  MockBroker broker({.topics = {{"cards", 1}}});
  EXPECT_THROW(broker.create_topic({"bad name", 1}), InvalidArgument);
  EXPECT_THROW(broker.create_topic({"ok", 0}), InvalidArgument);
  EXPECT_THROW(MockBroker({.brokers = 0, .topics = {}}), InvalidArgument);
  EXPECT_THROW(broker.refuse_next_commits(0), InvalidArgument);
  EXPECT_FALSE(broker.bootstrap().empty());
}

}  // namespace
}  // namespace trib::stream
