// A trial's metric, read from its run directory's metrics.jsonl (one object per evaluation:
// step, split, loss, accuracy).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trib::sweep {

struct MetricPoint {
  std::int64_t step = 0;
  double value = 0;
};

// Every evaluation of `metric` (accuracy, loss: the test split; train_accuracy, train_loss),
// in file order; a metrics.jsonl that does not exist yet reads as none.
std::vector<MetricPoint> read_curve(const std::filesystem::path& run_dir, const std::string& metric);
// The last evaluation at or before `max_step` (0: any).
std::optional<MetricPoint> last_metric(const std::filesystem::path& run_dir, const std::string& metric,
                                       std::int64_t max_step = 0);

}  // namespace trib::sweep
