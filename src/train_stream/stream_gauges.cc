#include "train_stream/stream_gauges.h"

#include <algorithm>

namespace trib::train_stream {

StreamGauges::StreamGauges(monitor::MetricsRegistry& registry)
    : registry_(registry),
      freshness_(registry.histogram("trib_stream_freshness_seconds",
                                    "From an event's timestamp to the update that trained on it.",
                                    {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600})) {}

void StreamGauges::step(const data::Batch& batch, std::int64_t now_ms) {
  if (!batch.has(stream::KafkaSource::kEventTime)) return;
  for (std::int64_t t : batch.get(stream::KafkaSource::kEventTime).span<std::int64_t>())
    freshness_.observe(double(std::max<std::int64_t>(0, now_ms - std::max(t, floor_ms_))) / 1000.0);
}

void StreamGauges::report(const std::vector<stream::PartitionLag>& lag, const nlohmann::json& row) {
  for (const stream::PartitionLag& p : lag)
    registry_
        .gauge("trib_stream_consumer_lag", "Records behind the partition's end (-1: unknown).",
               {{"partition", std::to_string(p.partition)}})
        .set(double(p.lag));
  auto set = [&](const char* name, const char* help, const char* key) {
    if (row.contains(key) && row[key].is_number()) registry_.gauge(name, help).set(row[key].get<double>());
  };
  set("trib_stream_prequential_accuracy", "Accuracy of each batch scored before it was trained on (window).",
      "prequential_accuracy");
  set("trib_stream_prequential_auc", "AUC of the prequential scores (window).", "prequential_auc");
  set("trib_stream_events_per_second", "Events trained on per second.", "events_per_s");
}

}  // namespace trib::train_stream
