#include "trib/stream/event_generator.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

// Merchant categories: 0 grocery, 1 fuel, 2 restaurants, 3 travel, 4 electronics,
// 5 online gaming, 6 jewellery, 7 pharmacy, 8 clothing, 9 cash (ATM).
constexpr int kCategories = 10;

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

bool is(std::int32_t category, std::initializer_list<int> set) {
  return std::find(set.begin(), set.end(), category) != set.end();
}

}  // namespace

EventGenerator::EventGenerator(EventGeneratorOptions options) : options_(options), rng_(options.seed) {
  TRIB_CHECK(options_.cards >= 1, InvalidArgument, "event generator: cards {} < 1", options_.cards);
}

FraudEvent EventGenerator::next(std::int64_t timestamp_ms) {
  if (produced_ == 0) first_timestamp_ms_ = timestamp_ms;
  const bool by_count = options_.drift_after_events >= 0 && produced_ >= options_.drift_after_events;
  const bool by_time = options_.drift_after_seconds >= 0 &&
                       static_cast<double>(timestamp_ms - first_timestamp_ms_) >= options_.drift_after_seconds * 1000.0;
  if (by_count || by_time) regime_ = FraudRegime::after_drift;

  FraudEvent e;
  e.id = options_.first_id + produced_++;
  e.timestamp_ms = timestamp_ms;
  e.card = static_cast<std::int64_t>(rng_.below(static_cast<std::uint64_t>(options_.cards)));
  // Most spending in the day, some at any hour.
  e.hour = rng_.uniform() < 0.15f ? static_cast<std::int32_t>(rng_.below(24))
                                  : std::clamp(static_cast<std::int32_t>(std::lround(14 + 4 * rng_.normal())), 0, 23);
  e.amount = std::round(std::clamp(std::exp(3.4f + 1.1f * rng_.normal()), 0.5f, 20000.0f) * 100.0f) / 100.0f;
  e.merchant_category = static_cast<std::int32_t>(rng_.below(kCategories));
  e.distance_km = std::round(std::clamp(std::exp(1.5f + 1.3f * rng_.normal()), 0.0f, 9000.0f) * 10.0f) / 10.0f;
  e.velocity_1h = static_cast<std::int32_t>(std::min(30.0f, std::floor(-std::log(1.0f - rng_.uniform()) * 1.3f)));
  e.card_present = rng_.uniform() < 0.7f ? 1 : 0;
  e.foreign = rng_.uniform() < 0.06f ? 1 : 0;
  // The label is drawn from the rule, so even a perfect model errs: the noise of real data.
  e.label = rng_.uniform() < fraud_probability(e, regime_) ? 1 : 0;
  return e;
}

double EventGenerator::fraud_probability(const FraudEvent& e, FraudRegime regime) {
  const double log_amount = std::log(std::max(e.amount, 0.5f));  // ~3.4 typical
  const bool night = e.hour < 6;
  const bool far = e.distance_km > 100;
  if (regime == FraudRegime::before_drift) {
    // Card-not-present, big-ticket fraud far from home, at night, on resellable goods.
    const double z = -4.4 + 0.9 * (log_amount - 3.4) + 1.3 * far + 1.3 * (1 - e.card_present) + 0.9 * night +
                     1.1 * is(e.merchant_category, {3, 4, 6}) + 0.9 * e.foreign + 0.15 * e.velocity_1h;
    return sigmoid(z);
  }
  // After the drift: card testing and skimming. Small amounts in quick succession with the
  // card present, at fuel stations, ATMs and gaming sites, in the daytime; large, far,
  // card-not-present purchases are now mostly genuine.
  const double z = -5.2 - 0.9 * (log_amount - 3.4) + 0.55 * e.velocity_1h + 1.2 * e.card_present +
                   1.3 * is(e.merchant_category, {1, 5, 9}) + 0.6 * (e.hour >= 10 && e.hour <= 17) - 0.8 * far -
                   0.6 * night;
  return sigmoid(z);
}

std::string EventGenerator::encode(const FraudEvent& e, RecordFormat format) {
  if (format == RecordFormat::csv) {
    return fmt::format("{},{},{},{:.2f},{},{},{:.1f},{},{},{},{}", e.id, e.timestamp_ms, e.card, e.amount,
                       e.merchant_category, e.hour, e.distance_km, e.velocity_1h, e.card_present, e.foreign,
                       e.label);
  }
  return fmt::format(
      R"({{"id":{},"ts":{},"card":{},"amount":{:.2f},"merchant_category":{},"hour":{},"distance_km":{:.1f},)"
      R"("velocity_1h":{},"card_present":{},"foreign":{},"label":{}}})",
      e.id, e.timestamp_ms, e.card, e.amount, e.merchant_category, e.hour, e.distance_km, e.velocity_1h,
      e.card_present, e.foreign, e.label);
}

const std::vector<std::string>& EventGenerator::feature_names() {
  static const std::vector<std::string> names = {"amount",      "merchant_category", "hour",   "distance_km",
                                                 "velocity_1h", "card_present",      "foreign"};
  return names;
}

const std::vector<std::string>& EventGenerator::csv_columns() {
  static const std::vector<std::string> columns = {"id",          "ts",          "card",         "amount",
                                                   "merchant_category", "hour", "distance_km", "velocity_1h",
                                                   "card_present", "foreign",    "label"};
  return columns;
}

SchemaConfig EventGenerator::schema(RecordFormat format) {
  SchemaConfig s;
  s.format = format;
  s.features = feature_names();
  s.label = "label";
  s.id_field = "id";
  if (format == RecordFormat::csv) s.csv_columns = csv_columns();
  s.num_classes = 2;
  return s;
}

}  // namespace trib::stream
