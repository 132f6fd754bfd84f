// Online (prequential) evaluation of a model learning from a stream: every batch is scored
// before it is trained on, so each example tests the model exactly once, on data it has not
// seen. Rolling accuracy and AUC cover the last `window` examples, which is what shows a model
// degrading at a drift and recovering. Also: events/s, freshness (the time from an event's
// timestamp to the update that used it) as p50/p99, and the consumer lag per partition.
//
//   metrics.record(batch, scores, now_ms);            // scores: P(label = 1), before the step
//   train_step(batch);
//   metrics.set_consumer_lag(kafka->lag());
//   metrics_jsonl << metrics.to_json().dump() << '\n';
//
// Binary labels (0/1); not thread-safe (the trainer's thread owns it).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trib/data/batch.h"
#include "trib/stream/kafka_source.h"
#include "trib/stream/stream_counts.h"

namespace trib::stream {

struct PrequentialOptions {
  std::int64_t window = 10'000;          // examples behind accuracy, AUC and freshness
  std::int64_t rate_window_ms = 10'000;  // update time behind events/s
};

class PrequentialMetrics {
 public:
  // InvalidArgument for a window or rate window < 1.
  explicit PrequentialMetrics(PrequentialOptions options = {});

  // One batch: scores computed before training on it, its labels (0/1), its events' times in
  // ms since the epoch (empty when unknown), and when the update that used it happened.
  void record(std::span<const float> scores, std::span<const std::int32_t> labels,
              std::span<const std::int64_t> event_time_ms, std::int64_t update_time_ms);
  // The same, reading labels and KafkaSource::kEventTime (if present) from the batch.
  void record(const data::Batch& batch, std::span<const float> scores, std::int64_t update_time_ms);
  void set_consumer_lag(std::vector<PartitionLag> lag) { lag_ = std::move(lag); }
  // Events of a step skipped on purpose (a non-finite gradient).
  void record_skipped(std::int64_t rows) { counts_.skipped += rows; }
  // This run's poison records so far (the source's stats().poison).
  void set_dead_lettered(std::int64_t poison) { counts_.dead_lettered = poison; }
  // A resumed job continues its counts from the checkpoint's.
  void restore_counts(const StreamCounts& saved) { restored_ = saved; }
  // The job rolled back in place to a checkpoint: counts() is `saved` again, and goes on
  // from there (the rolling window keeps the scores it saw: they were scored before training).
  void rewind_counts(const StreamCounts& saved);
  // These counts, restored ones included ("examples" in to_json is their `trained`).
  StreamCounts counts() const;
  // Events older than `ms` count their freshness from it: a resumed job sets its start, so
  // that the time it was down is not reported as staleness of the model.
  void set_freshness_floor(std::int64_t ms) { freshness_floor_ms_ = ms; }

  std::int64_t examples() const { return total_; }  // this run
  std::optional<double> accuracy() const;  // score >= 0.5 predicts 1
  std::optional<double> auc() const;       // nullopt while the window holds one class
  double events_per_second() const;
  std::optional<double> freshness_ms(double quantile) const;  // quantile in [0, 1]

  // {"examples", "prequential_accuracy", "prequential_auc", "events_per_s", "freshness_p50_ms",
  //  "freshness_p99_ms", "consumer_lag": {"<partition>": n}, "consumer_lag_total", "consumed",
  //  "trained", "skipped", "dead_lettered"}; null for what is not known yet.
  nlohmann::json to_json() const;

 private:
  PrequentialOptions options_;
  // The last `window` examples, in a ring (every statistic here ignores their order).
  std::vector<float> scores_;
  std::vector<std::int32_t> labels_;
  std::vector<std::int64_t> freshness_;  // -1: unknown
  std::size_t head_ = 0;                 // next slot to write
  std::int64_t total_ = 0;
  StreamCounts counts_;    // this run's skipped and dead-lettered (trained is total_)
  StreamCounts restored_;  // from the checkpoint
  std::int64_t freshness_floor_ms_ = 0;
  std::deque<std::pair<std::int64_t, std::int64_t>> updates_;  // (update time, rows)
  std::vector<PartitionLag> lag_;
};

}  // namespace trib::stream
