#include "trib/stream/prequential_metrics.h"

#include <vector>

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

TEST(PrequentialMetricsTest, AccuracyAndAucCoverTheLastWindowOnly) {
  PrequentialMetrics m(PrequentialOptions{.window = 4, .rate_window_ms = 10'000});
  // Four wrong predictions, then four right ones: the window forgets the wrong ones.
  m.record(std::vector<float>{0.9f, 0.8f, 0.1f, 0.2f}, std::vector<std::int32_t>{0, 0, 1, 1}, {}, 1000);
  EXPECT_DOUBLE_EQ(*m.accuracy(), 0.0);
  EXPECT_DOUBLE_EQ(*m.auc(), 0.0);
  m.record(std::vector<float>{0.9f, 0.7f, 0.3f, 0.2f}, std::vector<std::int32_t>{1, 1, 0, 0}, {}, 2000);
  EXPECT_DOUBLE_EQ(*m.accuracy(), 1.0);
  EXPECT_DOUBLE_EQ(*m.auc(), 1.0);
  EXPECT_EQ(m.examples(), 8);
}

TEST(PrequentialMetricsTest, FreshnessPercentilesAreExactOverTheWindow) {
  PrequentialMetrics m(PrequentialOptions{.window = 100, .rate_window_ms = 10'000});
  std::vector<float> scores(100, 0.5f);
  std::vector<std::int32_t> labels(100, 0);
  std::vector<std::int64_t> times(100);
  for (int i = 0; i < 100; ++i) times[i] = 10'000 - (i + 1);  // freshness 1..100 ms at update 10000
  m.record(scores, labels, times, 10'000);
  EXPECT_DOUBLE_EQ(*m.freshness_ms(0.5), 50);
  EXPECT_DOUBLE_EQ(*m.freshness_ms(0.99), 99);
  EXPECT_THROW(m.freshness_ms(1.5), InvalidArgument);
}

TEST(PrequentialMetricsTest, EventsPerSecondFromUpdateTimes) {
  PrequentialMetrics m(PrequentialOptions{.window = 1000, .rate_window_ms = 10'000});
  std::vector<float> scores(50, 0.5f);
  std::vector<std::int32_t> labels(50, 1);
  for (int i = 0; i <= 10; ++i) m.record(scores, labels, {}, 1000 + i * 100);  // 50 rows per 100 ms
  EXPECT_DOUBLE_EQ(m.events_per_second(), 500.0);
}

TEST(PrequentialMetricsTest, JsonHoldsEveryMetricAndNullForTheUnknown) {
  PrequentialMetrics m;
  nlohmann::json empty = m.to_json();
  EXPECT_TRUE(empty["prequential_auc"].is_null());
  EXPECT_TRUE(empty["freshness_p99_ms"].is_null());

  m.record(std::vector<float>{0.9f, 0.1f}, std::vector<std::int32_t>{1, 0}, std::vector<std::int64_t>{900, 950}, 1000);
  m.set_consumer_lag({PartitionLag{.partition = 0, .next_offset = 5, .high_watermark = 9, .lag = 4},
                      PartitionLag{.partition = 3, .next_offset = 1, .high_watermark = 1, .lag = 0}});
  nlohmann::json j = m.to_json();
  EXPECT_EQ(j["examples"], 2);
  EXPECT_DOUBLE_EQ(j["prequential_accuracy"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["prequential_auc"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["freshness_p50_ms"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(j["freshness_p99_ms"].get<double>(), 100);
  EXPECT_EQ(j["consumer_lag"]["0"], 4);
  EXPECT_EQ(j["consumer_lag"]["3"], 0);
  EXPECT_EQ(j["consumer_lag_total"], 4);
  EXPECT_TRUE(j.contains("events_per_s"));
}

TEST(PrequentialMetricsTest, RejectsMismatchedOrNonBinaryInput) {
  PrequentialMetrics m;
  EXPECT_THROW(m.record(std::vector<float>{0.5f}, std::vector<std::int32_t>{0, 1}, {}, 0), InvalidArgument);
  EXPECT_THROW(m.record(std::vector<float>{0.5f}, std::vector<std::int32_t>{2}, {}, 0), InvalidArgument);
  EXPECT_THROW(PrequentialMetrics(PrequentialOptions{.window = 0}), InvalidArgument);
}

TEST(PrequentialMetricsTest, CountsContinueFromACheckpointAndAddUpToTheConsumed) {
  PrequentialMetrics first;
  first.record(std::vector<float>{0.9f, 0.1f, 0.4f}, std::vector<std::int32_t>{1, 0, 0}, {}, 1000);
  first.record_skipped(2);
  first.set_dead_lettered(1);
  EXPECT_EQ(first.counts(), (StreamCounts{.trained = 3, .skipped = 2, .dead_lettered = 1}));
  data::DataPosition checkpoint;
  save_counts(checkpoint, 1, first.counts());
  save_counts(checkpoint, 0, StreamCounts{.trained = 10, .skipped = 0, .dead_lettered = 0});

  PrequentialMetrics resumed;
  resumed.restore_counts(counts_in(data::DataPosition::parse(checkpoint.serialize())).at(1));
  resumed.record(std::vector<float>{0.9f}, std::vector<std::int32_t>{1}, {}, 2000);
  resumed.set_dead_lettered(4);
  const nlohmann::json j = resumed.to_json();
  EXPECT_EQ(j["examples"], 4);
  EXPECT_EQ(j["trained"], 4);
  EXPECT_EQ(j["skipped"], 2);
  EXPECT_EQ(j["dead_lettered"], 5);
  EXPECT_EQ(j["consumed"], 11);

  std::map<int, StreamCounts> all = counts_in(checkpoint);
  all[1] = resumed.counts();
  const nlohmann::json summary = summary_json(all);
  EXPECT_EQ(summary["split"], "stream_summary");
  EXPECT_EQ(summary["trained"], 14);
  EXPECT_EQ(summary["consumed"], 21);
  EXPECT_EQ(summary["workers"]["0"]["trained"], 10);
  data::DataPosition bad;
  bad.set_int("stream_metrics.w1.eaten", 3);
  EXPECT_THROW(counts_in(bad), Corruption);
}

// A resumed job reads events that waited while it was down: their wait is not staleness of
// the model.
TEST(PrequentialMetricsTest, FreshnessAfterAResumeLeavesOutTheDowntime) {
  PrequentialMetrics m;
  m.set_freshness_floor(50'000);  // the resumed job started at 50 s
  // An event of 10 s (before the downtime) and one of 50.1 s, both used at 50.3 s.
  m.record(std::vector<float>{0.5f, 0.5f}, std::vector<std::int32_t>{0, 0}, std::vector<std::int64_t>{10'000, 50'100},
           50'300);
  EXPECT_DOUBLE_EQ(*m.freshness_ms(1.0), 300);
  EXPECT_DOUBLE_EQ(*m.freshness_ms(0.0), 200);
}

}  // namespace
}  // namespace trib::stream
