// Curves as one self-contained SVG: panels side by side (loss, accuracy, scaling, ...), one
// line per series (a run directory, a worker, a strategy), axes with their ranges and a legend
// under each panel that grows with its series. `trib plot` draws runs' metrics.jsonl and
// bench/scaling.sh's lines with it; plot/svg_to_png.h rasterizes the result.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trib::plot {

struct Curve {
  std::string label;                          // e.g. the run directory's name
  std::vector<std::pair<double, double>> xy;  // in x order
  bool dashed = false;                        // a peer's curve beside ours
};

struct Panel {
  std::string title;   // "test accuracy"
  std::string xlabel;  // "step"
  std::vector<Curve> curves;
  bool y_from_zero = false;   // throughput: the axis starts at 0, so ratios read off the plot
  bool markers = false;       // a dot on every point (few, measured points)
  std::vector<double> xticks = {};  // labelled x values; none: the axis' two ends
};

std::string curves_svg(const std::vector<Panel>& panels);

}  // namespace trib::plot
