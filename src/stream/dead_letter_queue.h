// Where records that do not fit the schema go: a dead-letter topic (by default
// "<topic>.dlq"). Each keeps its original key and value, so it can be fixed and replayed, and
// gains headers (the Kafka Connect convention) saying what was wrong and where it came from:
//   trib.error         "field 'amount' is missing"
//   trib.error.kind    missing_field | not_numeric | label_out_of_range | malformed
//   trib.error.field   amount
//   trib.source.topic / trib.source.partition / trib.source.offset / trib.source.timestamp
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trib/stream/kafka_producer.h"
#include "stream/record_decoder.h"

namespace trib::stream::detail {

class DeadLetterQueue {
 public:
  DeadLetterQueue(const KafkaConfig& config, std::string source_topic, std::string topic);

  // Sends asynchronously; delivery outcomes show in stats().
  void send(std::int32_t partition, std::int64_t offset, std::int64_t timestamp_ms, std::string_view key,
            std::string_view value, const DecodeError& error);
  void poll() { producer_.poll(); }
  bool flush(std::chrono::milliseconds timeout) { return producer_.flush(timeout); }
  ProducerStats stats() const { return producer_.stats(); }
  const std::string& topic() const { return topic_; }

 private:
  std::string source_topic_;
  std::string topic_;
  KafkaProducer producer_;
};

}  // namespace trib::stream::detail
