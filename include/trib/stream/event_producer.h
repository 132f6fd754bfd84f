// `trib produce` as a library call: writes EventGenerator's transactions to a topic at a given
// rate, for a given count or time, until stopped. The streaming example and the tests use it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "trib/stream/event_generator.h"
#include "trib/stream/kafka_config.h"
#include "trib/stream/schema.h"

namespace trib::stream {

struct ProduceOptions {
  KafkaConfig kafka;
  std::string topic;
  RecordFormat format = RecordFormat::json;
  // The message key: "card" (a card's events stay in order on one partition), "id" or "none"
  // (spread evenly).
  std::string key = "card";
  double rate = 1000;          // events per second; 0: as fast as the broker takes them
  std::int64_t count = -1;     // stop after this many events; negative: no limit
  double duration_s = -1;      // stop after this long; negative: no limit
  std::int32_t partition = -1; // every event to this partition; negative: by the key's hash
  EventGeneratorOptions generator;
};

struct ProduceReport {
  std::int64_t produced = 0;   // handed to the producer
  std::int64_t delivered = 0;  // acknowledged by the broker
  std::int64_t failed = 0;
  std::int64_t fraud = 0;      // events labelled fraud
  std::int64_t drift_at = -1;  // id of the first event after the drift, -1 if none
  double seconds = 0;
  std::string last_error;
};

// Throws InvalidArgument for bad options (naming them), Unavailable for an unreachable broker
// and NotFound for a missing topic. Returns once count or duration is reached or `stop` is
// set, after waiting (up to 10 s) for the broker to acknowledge what was sent. `progress`, if
// given, is called about once a second.
ProduceReport produce_events(const ProduceOptions& options, const std::atomic<bool>& stop,
                             const std::function<void(const ProduceReport&)>& progress = {});

}  // namespace trib::stream
