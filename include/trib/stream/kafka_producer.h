// A Kafka producer: what the event generator and the dead-letter queue write with. Messages
// are sent asynchronously; delivery outcomes are counted (served by poll() and flush()).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "trib/stream/kafka_config.h"

namespace trib::stream {

struct Header {
  std::string name;
  std::string value;
};

struct ProducerStats {
  std::int64_t enqueued = 0;
  std::int64_t delivered = 0;
  std::int64_t failed = 0;
  std::string last_error;  // of the latest failed delivery, empty if none
};

class KafkaProducer {
 public:
  // Reaches the cluster before returning, so that a wrong address fails here: Unavailable
  // naming the address after config.connect_timeout. `name` labels errors ("dead-letter
  // producer"). Thread-safe except for construction and destruction.
  explicit KafkaProducer(const KafkaConfig& config, std::string name = "producer");
  // Waits up to 5 s for messages still in flight, then drops them.
  ~KafkaProducer();
  KafkaProducer(const KafkaProducer&) = delete;
  KafkaProducer& operator=(const KafkaProducer&) = delete;

  // Enqueues one message. partition < 0 picks one from the key's hash (any partition for an
  // empty key); timestamp_ms <= 0 means now. Waits while librdkafka's queue is full.
  void produce(std::string_view topic, std::string_view key, std::string_view value,
               std::int64_t timestamp_ms = 0, std::span<const Header> headers = {},
               std::int32_t partition = -1);

  // Serves delivery reports without waiting.
  void poll();
  // Waits until everything enqueued is delivered or has failed; false on timeout.
  bool flush(std::chrono::milliseconds timeout);

  // Partitions of `topic`; NotFound naming it when the cluster does not have it.
  int partition_count(const std::string& topic);

  ProducerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trib::stream
