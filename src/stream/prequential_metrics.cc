#include "trib/stream/prequential_metrics.h"

#include <algorithm>
#include <cmath>

#include "trib/core/error.h"
#include "trib/stream/auc.h"

namespace trib::stream {

PrequentialMetrics::PrequentialMetrics(PrequentialOptions options) : options_(options) {
  TRIB_CHECK(options_.window >= 1, InvalidArgument, "prequential metrics: window {} < 1", options_.window);
  TRIB_CHECK(options_.rate_window_ms >= 1, InvalidArgument, "prequential metrics: rate window {} ms < 1",
             options_.rate_window_ms);
}

void PrequentialMetrics::record(std::span<const float> scores, std::span<const std::int32_t> labels,
                                std::span<const std::int64_t> event_time_ms, std::int64_t update_time_ms) {
  TRIB_CHECK(scores.size() == labels.size() && (event_time_ms.empty() || event_time_ms.size() == labels.size()),
             InvalidArgument, "prequential metrics: {} scores, {} labels and {} event times should be as many",
             scores.size(), labels.size(), event_time_ms.size());
  const auto window = static_cast<std::size_t>(options_.window);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    TRIB_CHECK(labels[i] == 0 || labels[i] == 1, InvalidArgument,
               "prequential metrics: label {} is not 0 or 1 (binary labels only)", labels[i]);
    const std::int64_t fresh =
        event_time_ms.empty()
            ? -1
            : std::max<std::int64_t>(0, update_time_ms - std::max(event_time_ms[i], freshness_floor_ms_));
    if (scores_.size() < window) {
      scores_.push_back(scores[i]);
      labels_.push_back(labels[i]);
      freshness_.push_back(fresh);
    } else {
      scores_[head_] = scores[i];
      labels_[head_] = labels[i];
      freshness_[head_] = fresh;
    }
    head_ = (head_ + 1) % window;
    ++total_;
  }
  updates_.emplace_back(update_time_ms, static_cast<std::int64_t>(scores.size()));
  while (updates_.size() > 2 && updates_.back().first - updates_.front().first > options_.rate_window_ms)
    updates_.pop_front();
}

void PrequentialMetrics::record(const data::Batch& batch, std::span<const float> scores, std::int64_t update_time_ms) {
  const Tensor& labels = batch.labels();
  std::span<const std::int64_t> times;
  if (batch.has(KafkaSource::kEventTime)) times = batch.get(KafkaSource::kEventTime).span<std::int64_t>();
  record(scores, labels.span<std::int32_t>(), times, update_time_ms);
}

std::optional<double> PrequentialMetrics::accuracy() const {
  if (scores_.empty()) return std::nullopt;
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < scores_.size(); ++i) correct += (scores_[i] >= 0.5f ? 1 : 0) == labels_[i];
  return static_cast<double>(correct) / static_cast<double>(scores_.size());
}

std::optional<double> PrequentialMetrics::auc() const { return stream::auc(scores_, labels_); }

double PrequentialMetrics::events_per_second() const {
  if (updates_.size() < 2) return 0;
  // Rows of every update after the first, over the time since the first: the first update's
  // rows were consumed before the span began.
  std::int64_t rows = 0;
  for (std::size_t i = 1; i < updates_.size(); ++i) rows += updates_[i].second;
  const std::int64_t span_ms = updates_.back().first - updates_.front().first;
  return span_ms > 0 ? static_cast<double>(rows) * 1000.0 / static_cast<double>(span_ms) : 0;
}

std::optional<double> PrequentialMetrics::freshness_ms(double quantile) const {
  TRIB_CHECK(quantile >= 0 && quantile <= 1, InvalidArgument, "freshness quantile {} is outside [0, 1]", quantile);
  std::vector<std::int64_t> known;
  known.reserve(freshness_.size());
  for (std::int64_t f : freshness_)
    if (f >= 0) known.push_back(f);
  if (known.empty()) return std::nullopt;
  // Nearest rank: the smallest value with at least `quantile` of the values at or below it.
  auto rank = static_cast<std::size_t>(std::ceil(quantile * static_cast<double>(known.size())));
  rank = std::clamp<std::size_t>(rank, 1, known.size()) - 1;
  std::nth_element(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(rank), known.end());
  return static_cast<double>(known[rank]);
}

StreamCounts PrequentialMetrics::counts() const {
  StreamCounts c = counts_;
  c.trained = total_;
  c += restored_;
  return c;
}

void PrequentialMetrics::rewind_counts(const StreamCounts& saved) {
  // counts() adds this run's own counts to restored_; what they hold is undone here.
  restored_ = saved;
  restored_.trained -= total_;
  restored_.skipped -= counts_.skipped;
  restored_.dead_lettered -= counts_.dead_lettered;
}

nlohmann::json PrequentialMetrics::to_json() const {
  auto value = [](std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json lag = nlohmann::json::object();
  std::int64_t total_lag = 0;
  bool lag_known = !lag_.empty();
  for (const PartitionLag& l : lag_) {
    lag[std::to_string(l.partition)] = l.lag >= 0 ? nlohmann::json(l.lag) : nlohmann::json(nullptr);
    if (l.lag >= 0)
      total_lag += l.lag;
    else
      lag_known = false;
  }
  const StreamCounts c = counts();
  nlohmann::json j = {
      {"examples", c.trained},
      {"prequential_accuracy", value(accuracy())},
      {"prequential_auc", value(auc())},
      {"events_per_s", events_per_second()},
      {"freshness_p50_ms", value(freshness_ms(0.5))},
      {"freshness_p99_ms", value(freshness_ms(0.99))},
      {"consumer_lag", lag},
      {"consumer_lag_total", lag_known ? nlohmann::json(total_lag) : nlohmann::json(nullptr)},
  };
  j.update(stream::to_json(c));
  return j;
}

}  // namespace trib::stream
