// Records that do not fit the schema are counted and sent to the dead-letter topic, where an
// external client reads them, and training goes on; a schema naming a field no record has is
// an error.
#include "integration/stream/kcat.h"
#include "integration/stream/stream_test_util.h"
#include "trib/core/error.h"
#include "trib/stream/stream_position.h"

namespace trib::stream {
namespace {

using namespace testing;


constexpr const char* kPoison = R"({"id": 5000, "amount": "a lot", "merchant_category": 1, "hour": 3})";

class DeadLetterTest : public StreamTest {
 protected:
  // 40 good events, the poison record, 40 more; returns the ids the source handed out.
  std::vector<std::int64_t> consume_around_poison(const std::string& cards, KafkaSourceStats& stats);
};

std::vector<std::int64_t> DeadLetterTest::consume_around_poison(const std::string& cards, KafkaSourceStats& stats) {
  produce_events(bootstrap(), cards, 0, 40);
  {
    KafkaProducer producer(fast_kafka(bootstrap()));
    producer.produce(cards, "poison", kPoison, 0, {}, /*partition=*/0);
    EXPECT_TRUE(producer.flush(5s));
  }
  produce_events(bootstrap(), cards, 40, 40);
  KafkaSource source(source_options(bootstrap(), cards));
  auto ids = consume_until(source, [](const auto& got) { return got.size() >= 80; }, 10s);
  for (auto end = std::chrono::steady_clock::now() + 5s;
       source.stats().dead_lettered < 1 && std::chrono::steady_clock::now() < end;)
    source.next(1);  // serves the dead-letter producer's delivery reports
  stats = source.stats();
  return ids;
}

TEST_F(DeadLetterTest, APoisonRecordIsCountedAndDeadLetteredAndTrainingGoesOn) {
  const std::string cards = make_topic(2);
  KafkaSourceStats stats;
  expect_each_once(consume_around_poison(cards, stats), 80);
  EXPECT_EQ(stats.poison, 1);
  EXPECT_EQ(stats.dead_lettered, 1);
  EXPECT_EQ(stats.dead_letter_failures, 0) << stats.last_error;
}

TEST_F(DeadLetterTest, KcatReadsTheDeadLetterWithItsErrorAndSourceOffset) {
  TRIB_REQUIRE_KCAT();
  const std::string cards = make_topic(2);
  KafkaSourceStats stats;
  consume_around_poison(cards, stats);
  ASSERT_EQ(stats.dead_lettered, 1);
  const std::string value = run_kcat("-C -b " + bootstrap() + " -t " + cards + ".dlq -c 1 -e -f '%s\\n'");
  EXPECT_EQ(value, std::string(kPoison) + "\n");
  const std::string headers = run_kcat("-C -b " + bootstrap() + " -t " + cards + ".dlq -c 1 -e -f '%h\\n'");
  EXPECT_NE(headers.find("trib.error=field 'amount' is a string, expected a number"), std::string::npos) << headers;
  EXPECT_NE(headers.find("trib.error.kind=not_numeric"), std::string::npos) << headers;
  EXPECT_NE(headers.find("trib.source.topic=" + cards), std::string::npos) << headers;
  EXPECT_NE(headers.find("trib.source.partition=0"), std::string::npos) << headers;
  EXPECT_NE(headers.find("trib.source.offset="), std::string::npos) << headers;
}

TEST_F(DeadLetterTest, ASchemaFieldNoRecordHasIsAnErrorNamingIt) {
  const std::string cards = make_topic(1);
  produce_events(bootstrap(), cards, 0, 30);
  KafkaSourceOptions o = source_options(bootstrap(), cards);
  o.schema.features.push_back("balance");  // the generator has no such field
  o.schema_check_records = 20;
  KafkaSource source(o);
  try {
    consume_until(source, [](const auto&) { return false; }, 5s);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("schema names field 'balance', but none of the first 20 records"),
              std::string::npos)
        << e.what();
  }
}

// The check decides before anything is dead-lettered or committed: a fetch of thousands of
// records all lacking the field is not sent to the dead-letter topic, and a corrected rerun in
// the same group reads every record.
TEST_F(DeadLetterTest, AWrongSchemaFailsBeforeDeadLetteringOrCommittingAnything) {
  const std::string cards = make_topic(2);
  produce_events(bootstrap(), cards, 0, 3000);
  {
    KafkaSourceOptions o = source_options(bootstrap(), cards);
    o.schema.features.push_back("balance");
    o.reports_applied = true;
    KafkaSource source(o);
    EXPECT_THROW(consume_until(source, [](const auto&) { return false; }, 5s, 256), InvalidArgument);
    const KafkaSourceStats stats = source.stats();
    EXPECT_EQ(stats.poison, 0);
    EXPECT_EQ(stats.dead_lettered, 0);
    EXPECT_EQ(stats.records, 0);
    for (const auto& [p, offset] : offsets_of(source.applied_position(), cards)) EXPECT_EQ(offset, 0) << p;
  }  // leaves the group, committing its hand-over
  KafkaSource corrected(source_options(bootstrap(), cards));
  expect_each_once(consume_until(corrected, [](const auto& ids) { return ids.size() >= 3000; }, 15s, 256), 3000);
  EXPECT_EQ(corrected.stats().poison, 0);
}

TEST_F(DeadLetterTest, AWrongLabelIsASchemaErrorNamingIt) {
  const std::string cards = make_topic(1);
  produce_events(bootstrap(), cards, 0, 30);
  KafkaSourceOptions o = source_options(bootstrap(), cards);
  o.schema.label = "card";  // card numbers are no class indices
  KafkaSource source(o);
  try {
    consume_until(source, [](const auto&) { return false; }, 5s);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("schema field 'card' fits none of the first 20 records"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(source.stats().poison, 0);
  EXPECT_THROW(source.applied(data::Batch()), InvalidArgument) << "made without reports_applied";
}

// Poison records while the check decides are held, then dead-lettered in order once a good
// record shows the schema fits.
TEST_F(DeadLetterTest, PoisonBeforeTheFirstGoodRecordIsDeadLetteredOnceTheSchemaFits) {
  const std::string cards = make_topic(1);
  {
    KafkaProducer producer(fast_kafka(bootstrap()));
    for (int i = 0; i < 5; ++i) producer.produce(cards, "poison", kPoison, 0, {}, 0);
    ASSERT_TRUE(producer.flush(5s));
  }
  produce_events(bootstrap(), cards, 0, 40);
  KafkaSource source(source_options(bootstrap(), cards));
  expect_each_once(consume_until(source, [](const auto& ids) { return ids.size() >= 40; }, 10s), 40);
  for (auto end = std::chrono::steady_clock::now() + 5s;
       source.stats().dead_lettered < 5 && std::chrono::steady_clock::now() < end;)
    source.next(1);
  EXPECT_EQ(source.stats().poison, 5);
  EXPECT_EQ(source.stats().dead_lettered, 5);
  EXPECT_EQ(offsets_of(source.position(), cards).at(0), 45);
}

}  // namespace
}  // namespace trib::stream
