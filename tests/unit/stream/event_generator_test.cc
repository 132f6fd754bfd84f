#include "trib/stream/event_generator.h"

#include <vector>

#include <gtest/gtest.h>

#include "trib/stream/auc.h"
#include "stream/record_decoder.h"

namespace trib::stream {
namespace {

std::vector<FraudEvent> generate(EventGeneratorOptions options, int n, std::int64_t step_ms = 1) {
  EventGenerator g(options);
  std::vector<FraudEvent> out;
  for (int i = 0; i < n; ++i) out.push_back(g.next(1'000'000 + i * step_ms));
  return out;
}

// How well the pre-drift rule ranks the labels of `events`: what a model that learnt the old
// rule perfectly would score.
double old_rule_auc(const std::vector<FraudEvent>& events) {
  std::vector<float> scores;
  std::vector<std::int32_t> labels;
  for (const FraudEvent& e : events) {
    scores.push_back(static_cast<float>(EventGenerator::fraud_probability(e, FraudRegime::before_drift)));
    labels.push_back(e.label);
  }
  return *auc(scores, labels);
}

double fraud_rate(const std::vector<FraudEvent>& events) {
  double fraud = 0;
  for (const FraudEvent& e : events) fraud += e.label;
  return fraud / static_cast<double>(events.size());
}

TEST(EventGeneratorTest, SameSeedSameEventsWithMonotonicIds) {
  auto a = generate({.seed = 5}, 100);
  auto b = generate({.seed = 5}, 100);
  auto c = generate({.seed = 6}, 100);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(a[i].id, i);
    EXPECT_EQ(EventGenerator::encode(a[i], RecordFormat::json), EventGenerator::encode(b[i], RecordFormat::json));
  }
  EXPECT_NE(EventGenerator::encode(a[0], RecordFormat::json), EventGenerator::encode(c[0], RecordFormat::json));
}

TEST(EventGeneratorTest, FraudRateIsAFewPercentBeforeAndAfterTheDrift) {
  auto before = generate({.seed = 1}, 40'000);
  auto after = generate({.seed = 1, .drift_after_events = 0}, 40'000);
  EXPECT_GT(fraud_rate(before), 0.04);
  EXPECT_LT(fraud_rate(before), 0.11);
  EXPECT_GT(fraud_rate(after), 0.04);
  EXPECT_LT(fraud_rate(after), 0.11);
}

TEST(EventGeneratorTest, TheDriftMakesTheOldRuleMuchWorse) {
  auto events = generate({.seed = 2, .drift_after_events = 30'000}, 60'000);
  std::vector<FraudEvent> before(events.begin(), events.begin() + 30'000);
  std::vector<FraudEvent> after(events.begin() + 30'000, events.end());
  const double auc_before = old_rule_auc(before);
  const double auc_after = old_rule_auc(after);
  EXPECT_GT(auc_before, 0.8);
  EXPECT_LT(auc_after, 0.55);
}

TEST(EventGeneratorTest, DriftsAfterTheConfiguredTimeOfEventTime) {
  EventGenerator g({.seed = 3, .drift_after_seconds = 2.0});
  g.next(10'000);
  EXPECT_FALSE(g.drifted());
  g.next(11'999);
  EXPECT_FALSE(g.drifted());
  g.next(12'000);
  EXPECT_TRUE(g.drifted());
}

TEST(EventGeneratorTest, ItsSchemaDecodesItsRecordsInBothFormats) {
  auto events = generate({.seed = 4}, 50);
  for (RecordFormat format : {RecordFormat::json, RecordFormat::csv}) {
    RecordDecoder decoder(EventGenerator::schema(format));
    for (const FraudEvent& e : events) {
      std::vector<float> features(decoder.feature_count());
      DecodedRow row;
      auto error = decoder.decode(EventGenerator::encode(e, format), features, row);
      ASSERT_FALSE(error) << error->message;
      EXPECT_EQ(row.id, e.id);
      EXPECT_EQ(row.label, e.label);
      EXPECT_NEAR(features[0], e.amount, 0.01);
      EXPECT_EQ(features[4], static_cast<float>(e.velocity_1h));
    }
  }
}

}  // namespace
}  // namespace trib::stream
