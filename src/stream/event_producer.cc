#include "trib/stream/event_producer.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "trib/core/error.h"
#include "trib/stream/kafka_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib::stream {
namespace {

using Clock = std::chrono::steady_clock;

void validate(const ProduceOptions& o) {
  TRIB_CHECK(is_valid_topic_name(o.topic), InvalidArgument,
             "produce: topic '{}' is not a valid topic name ([a-zA-Z0-9._-], 1-249 characters)", o.topic);
  TRIB_CHECK(o.key == "card" || o.key == "id" || o.key == "none", InvalidArgument,
             "produce: key '{}' is unknown: expected card, id or none", o.key);
  TRIB_CHECK(std::isfinite(o.rate) && o.rate >= 0, InvalidArgument, "produce: rate {} events/s is not >= 0", o.rate);
  TRIB_CHECK(std::isfinite(o.duration_s), InvalidArgument, "produce: duration {} s is not a number", o.duration_s);
}

std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

ProduceReport produce_events(const ProduceOptions& options, const std::atomic<bool>& stop,
                             const std::function<void(const ProduceReport&)>& progress) {
  validate(options);
  KafkaProducer producer(options.kafka, "event producer");
  const int partitions = producer.partition_count(options.topic);  // NotFound naming the topic, before any event
  TRIB_CHECK(options.partition < partitions, InvalidArgument, "produce: partition {} does not exist: topic '{}' has {}",
             options.partition, options.topic, partitions);
  EventGenerator generator(options.generator);

  ProduceReport report;
  const auto start = Clock::now();
  auto next_progress = start + std::chrono::seconds(1);
  const bool timed = options.duration_s >= 0;
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                               timed ? options.duration_s : 0.0));
  while (!stop.load() && (options.count < 0 || report.produced < options.count) && (!timed || Clock::now() < end)) {
    if (options.rate > 0) {
      // Event i is due at start + i / rate: a schedule, not a sleep per event, so the rate holds
      // on average however long produce() takes.
      const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(static_cast<double>(report.produced) / options.rate));
      if (due > Clock::now()) {
        producer.poll();
        std::this_thread::sleep_until(std::min(due, Clock::now() + std::chrono::milliseconds(50)));
        continue;
      }
    }
    const FraudEvent e = generator.next(wall_ms());
    if (generator.drifted() && report.drift_at < 0) report.drift_at = e.id;
    const std::string key = options.key == "card" ? std::to_string(e.card)
                            : options.key == "id" ? std::to_string(e.id)
                                                  : std::string();
    producer.produce(options.topic, key, EventGenerator::encode(e, options.format), e.timestamp_ms, {},
                     options.partition);
    ++report.produced;
    report.fraud += e.label;
    if ((report.produced & 1023) == 0) producer.poll();
    if (progress && Clock::now() >= next_progress) {
      next_progress += std::chrono::seconds(1);
      const ProducerStats s = producer.stats();
      report.delivered = s.delivered;
      report.failed = s.failed;
      report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      progress(report);
    }
  }
  producer.flush(std::chrono::seconds(10));
  const ProducerStats s = producer.stats();
  report.delivered = s.delivered;
  report.failed = s.failed;
  report.last_error = s.last_error;
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace trib::stream
