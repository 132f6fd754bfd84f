// A stream job's metrics for Prometheus (monitoring.port): per partition, the consumer lag;
// a histogram of freshness (an event's timestamp to the update that used it); and the
// prequential accuracy and AUC, events/s, as its metrics.jsonl rows have them.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "trib/data/batch.h"
#include "trib/monitor/metrics_registry.h"
#include "trib/stream/kafka_source.h"

namespace trib::train_stream {

class StreamGauges {
 public:
  explicit StreamGauges(monitor::MetricsRegistry& registry);
  // Events older than `ms` count their freshness from it (a resumed job's start), as the
  // prequential metrics do.
  void set_freshness_floor(std::int64_t ms) { floor_ms_ = ms; }
  // After each applied step: the batch's events were used by an update at `now_ms`.
  void step(const data::Batch& batch, std::int64_t now_ms);
  // At each report: the lag per partition and the row written to metrics.jsonl.
  void report(const std::vector<stream::PartitionLag>& lag, const nlohmann::json& row);

 private:
  monitor::MetricsRegistry& registry_;
  monitor::Histogram& freshness_;
  std::int64_t floor_ms_ = 0;
};

}  // namespace trib::train_stream
