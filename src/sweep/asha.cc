#include "trib/sweep/asha.h"

#include <algorithm>
#include <cmath>

#include "trib/core/error.h"

namespace trib::sweep {

const char* rule_name(AshaRule r) { return r == AshaRule::stopping ? "stopping" : "promotion"; }

Asha::Asha(std::int64_t grace_period, std::int64_t max_steps, double reduction_factor, bool maximize)
    : max_steps_(max_steps), reduction_factor_(reduction_factor), maximize_(maximize) {
  TRIB_CHECK(grace_period > 0 && grace_period <= max_steps, InvalidArgument,
             "asha: grace_period must lie in [1, steps = {}], got {}", max_steps, grace_period);
  TRIB_CHECK(reduction_factor > 1, InvalidArgument, "asha: reduction_factor must be more than 1, got {}",
             reduction_factor);
  // As Ray Tune: grace_period * rf^k for k = 0 .. floor(log_rf(max / grace)); the last may
  // equal max_steps, where a trial ends anyway, so it is no rung here.
  const int count = static_cast<int>(std::log(double(max_steps) / double(grace_period)) / std::log(reduction_factor) + 1 + 1e-9);
  double r = static_cast<double>(grace_period);
  for (int k = 0; k < count; ++k, r *= reduction_factor) {
    auto step = static_cast<std::int64_t>(std::llround(r));
    if (step < max_steps && (rungs_.empty() || step > rungs_.back())) rungs_.push_back(step);
  }
}

std::int64_t Asha::next_stop(std::int64_t step) const {
  for (std::int64_t r : rungs_)
    if (r > step) return r;
  return max_steps_;
}

double Asha::percentile(std::vector<double> values, double q) {
  TRIB_CHECK(!values.empty(), InvalidArgument, "percentile of no values");
  std::sort(values.begin(), values.end());
  const double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double t = pos - static_cast<double>(lo);
  if (t == 0 || values[lo] == values[hi]) return values[lo];
  // This form, not lo + t * (hi - lo): with a diverged trial's -inf below, the cut-off is
  // -inf (everything finite goes on) rather than NaN (nothing does).
  return (1 - t) * values[lo] + t * values[hi];
}

std::optional<double> Asha::cutoff(std::int64_t rung) const {
  auto it = recorded_.find(rung);
  if (it == recorded_.end() || it->second.empty()) return std::nullopt;
  std::vector<double> values;
  for (const auto& [trial, v] : it->second) values.push_back(v);
  return percentile(values, (1.0 - 1.0 / reduction_factor_) * 100.0);
}

void Asha::record(int trial, std::int64_t rung, double metric) {
  // A NaN (a diverged trial) counts as the worst result.
  recorded_[rung][trial] = std::isnan(metric) ? -INFINITY : maximize_ ? metric : -metric;
}

bool Asha::on_rung(int trial, std::int64_t rung, double metric) {
  std::optional<double> cut = cutoff(rung);  // before this result, as Ray Tune
  const double v = maximize_ ? metric : -metric;
  const bool go_on = !std::isnan(v) && (!cut || v >= *cut);
  record(trial, rung, metric);
  if (go_on) mark_promoted(trial, rung);
  return go_on;
}

bool Asha::promoted(int trial, std::int64_t rung) const {
  auto it = promoted_.find(rung);
  return it != promoted_.end() && it->second.count(trial) > 0;
}

std::optional<std::pair<int, std::int64_t>> Asha::next_promotion() const {
  for (auto r = rungs_.rbegin(); r != rungs_.rend(); ++r) {
    auto it = recorded_.find(*r);
    if (it == recorded_.end()) continue;
    std::vector<std::pair<double, int>> ranked;  // (-metric, trial): best first, ties by id
    for (const auto& [trial, v] : it->second) ranked.emplace_back(-v, trial);
    std::sort(ranked.begin(), ranked.end());
    const auto top = static_cast<std::size_t>(std::floor(double(ranked.size()) / reduction_factor_ + 1e-9));
    for (std::size_t i = 0; i < top; ++i)
      if (!promoted(ranked[i].second, *r)) return std::make_pair(ranked[i].second, *r);
  }
  return std::nullopt;
}

}  // namespace trib::sweep
