// Synthetic card transactions with a fraud label drawn from a hidden rule: the "botnet
// simulating the behaviour of customers" that feeds the streaming example. The rule drifts
// once, after a configurable number of events or seconds of event time, from classic
// card-not-present fraud (large amounts, far from home, at night, risky merchants) to card
// testing and skimming (small amounts in quick succession, card present, fuel and cash), so a
// model trained before the drift gets worse after it and has to relearn.
//
// Deterministic: the same seed and timestamps give the same events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trib/core/random.h"
#include "trib/stream/schema.h"

namespace trib::stream {

struct FraudEvent {
  std::int64_t id = 0;            // first_id, first_id + 1, ... per generator
  std::int64_t timestamp_ms = 0;  // event time (also the Kafka message timestamp)
  std::int64_t card = 0;          // the card's number, the message key
  float amount = 0;               // in currency units
  std::int32_t merchant_category = 0;  // 0..9, see event_generator.cc
  std::int32_t hour = 0;               // local hour, 0..23
  float distance_km = 0;               // from the card holder's home
  std::int32_t velocity_1h = 0;        // the card's transactions in the past hour
  std::int32_t card_present = 0;       // 1: chip or swipe; 0: online or phone
  std::int32_t foreign = 0;            // 1: merchant abroad
  std::int32_t label = 0;              // 1: fraud
};

enum class FraudRegime { before_drift, after_drift };

struct EventGeneratorOptions {
  std::uint64_t seed = 1;
  std::int64_t cards = 10'000;
  std::int64_t first_id = 0;  // e.g. to continue the ids of an earlier run
  // The rule drifts at the first event past either threshold; negative: never by that one.
  std::int64_t drift_after_events = -1;  // events of this generator, whatever first_id is
  double drift_after_seconds = -1;  // of event time since the first event
};

class EventGenerator {
 public:
  // Throws InvalidArgument for cards < 1.
  explicit EventGenerator(EventGeneratorOptions options = {});

  // The next event, stamped `timestamp_ms`.
  FraudEvent next(std::int64_t timestamp_ms);

  bool drifted() const { return regime_ == FraudRegime::after_drift; }
  std::int64_t produced() const { return produced_; }

  // The hidden rule: the probability that `event` is fraud in `regime`.
  static double fraud_probability(const FraudEvent& event, FraudRegime regime);

  // One record: a flat JSON object, or a CSV line in csv_columns() order.
  static std::string encode(const FraudEvent& event, RecordFormat format);
  // The schema that decodes encode()'s records: the feature fields, label "label", id "id".
  static SchemaConfig schema(RecordFormat format);
  static const std::vector<std::string>& feature_names();
  static const std::vector<std::string>& csv_columns();

 private:
  EventGeneratorOptions options_;
  Rng rng_;
  std::int64_t produced_ = 0;
  std::int64_t first_timestamp_ms_ = 0;
  FraudRegime regime_ = FraudRegime::before_drift;
};

}  // namespace trib::stream
