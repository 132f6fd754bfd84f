// Curves as one self-contained SVG: panels side by side (loss, accuracy, ...), one line per
// series (a run directory, a worker), axes with their ranges. `trib plot RUN_DIR...` draws
// runs' metrics.jsonl with it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trib::monitor {

struct Curve {
  std::string label;                          // e.g. the run directory's name
  std::vector<std::pair<double, double>> xy;  // in x order
};

struct Panel {
  std::string title;   // "test accuracy"
  std::string xlabel;  // "step"
  std::vector<Curve> curves;
};

std::string curves_svg(const std::vector<Panel>& panels);

}  // namespace trib::monitor
