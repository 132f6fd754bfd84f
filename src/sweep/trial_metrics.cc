#include "trial_metrics.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace trib::sweep {

std::vector<MetricPoint> read_curve(const std::filesystem::path& run_dir, const std::string& metric) {
  const bool train = metric.starts_with("train_");
  const std::string split = train ? "train" : "test";
  const std::string field = train ? metric.substr(6) : metric;
  std::vector<MetricPoint> out;
  std::ifstream in(run_dir / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    // A line being written as we read (the trial runs) is skipped, not an error.
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("split", "") != split || !j.contains(field)) continue;
    if (!j[field].is_number()) continue;
    out.push_back({j.value("step", std::int64_t{0}), j[field].get<double>()});
  }
  return out;
}

std::optional<MetricPoint> last_metric(const std::filesystem::path& run_dir, const std::string& metric,
                                       std::int64_t max_step) {
  std::optional<MetricPoint> last;
  for (const MetricPoint& p : read_curve(run_dir, metric))
    if (max_step == 0 || p.step <= max_step) last = p;
  return last;
}

}  // namespace trib::sweep
