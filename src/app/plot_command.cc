// `trib plot`: a sweep's trial curves (sweep/sweep_plot.cc), or the loss and accuracy curves
// of one or several run directories side by side as an SVG (monitor/curves_svg.h).
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "trib/core/error.h"
#include "trib/monitor/curves_svg.h"
#include "trib/sweep/sweep.h"

namespace trib::app {

namespace fs = std::filesystem;

namespace {

// One run's curves: test loss and accuracy by step, and the per-step training loss of each
// worker (training.log_every rows).
void add_run(const fs::path& run, std::vector<monitor::Panel>& panels) {
  const fs::path file = run / "metrics.jsonl";
  std::ifstream in(file);
  TRIB_CHECK(in.good(), NotFound, "{} has no metrics.jsonl: expected a run directory (trib train --output)",
             run.string());
  const std::string name = run.filename().empty() ? run.parent_path().filename().string() : run.filename().string();
  monitor::Curve loss{name, {}}, accuracy{name, {}};
  std::map<int, monitor::Curve> steps;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;  // a line being written
    const std::string split = j.value("split", "");
    const double step = j.value("step", 0.0);
    if (split == "test" || split == "stream") {
      const char* acc = split == "test" ? "accuracy" : "prequential_accuracy";
      if (j.contains("loss") && j["loss"].is_number()) loss.xy.emplace_back(step, j["loss"].get<double>());
      if (j.contains(acc) && j[acc].is_number()) accuracy.xy.emplace_back(step, j[acc].get<double>());
    } else if (split == "step" && j.contains("loss") && j["loss"].is_number()) {
      const int w = j.value("worker", 0);
      monitor::Curve& c = steps[w];
      c.label = fmt::format("{} worker{}", name, w);
      c.xy.emplace_back(step, j["loss"].get<double>());
    }
  }
  panels[0].curves.push_back(std::move(loss));
  panels[1].curves.push_back(std::move(accuracy));
  for (auto& [w, c] : steps) {
    std::sort(c.xy.begin(), c.xy.end());
    panels[2].curves.push_back(std::move(c));
  }
}

}  // namespace

int run_plot(const PlotArgs& args) {
  TRIB_CHECK(!args.paths.empty(), InvalidArgument, "trib plot: give a sweep directory or run directories");
  if (args.paths.size() == 1 && args.output.empty() && fs::exists(fs::path(args.paths[0]) / "sweep.jsonl"))
    return sweep::plot_sweep(args.paths[0], stdout);
  const std::string output = args.output.empty() ? "curves.svg" : args.output;
  TRIB_CHECK(fs::path(output).extension() == ".svg", InvalidArgument,
             "--output {}: trib plot writes SVG (.svg); convert it to PNG with any SVG viewer (rsvg-convert, "
             "chromium --screenshot)",
             output);
  std::vector<monitor::Panel> panels{{"test loss", "step", {}}, {"test accuracy", "step", {}},
                                     {"training loss (training.log_every)", "step", {}}};
  for (const std::string& p : args.paths) add_run(p, panels);
  std::ofstream out(output);
  out << monitor::curves_svg(panels);
  TRIB_CHECK(out.good(), IoError, "cannot write {}", output);
  fmt::print("{} run(s): loss and accuracy curves in {}\n", args.paths.size(), output);
  return 0;
}

}  // namespace trib::app
