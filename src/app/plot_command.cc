// `trib plot`: a sweep's trial curves (sweep/sweep_plot.cc), or the loss and accuracy curves
// of one or several run directories side by side, and scaling plots from files of
// bench/scaling.sh's lines, as an SVG (plot/curves_svg.h) or a PNG of it (plot/svg_to_png.h).
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "trib/core/error.h"
#include "plot/curves_svg.h"
#include "plot/scaling_lines.h"
#include "plot/svg_to_png.h"
#include "trib/sweep/sweep.h"

namespace trib::app {

namespace fs = std::filesystem;

namespace {

// One run's curves: test loss and accuracy by step, and the per-step training loss of each
// worker (training.log_every rows).
void add_run(const fs::path& run, std::vector<plot::Panel>& panels) {
  const fs::path file = run / "metrics.jsonl";
  std::ifstream in(file);
  TRIB_CHECK(in.good(), NotFound, "{} has no metrics.jsonl: expected a run directory (trib train --output)",
             run.string());
  const std::string name = run.filename().empty() ? run.parent_path().filename().string() : run.filename().string();
  plot::Curve loss{name, {}}, accuracy{name, {}};
  std::map<int, plot::Curve> steps;
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
      plot::Curve& c = steps[w];
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
  TRIB_CHECK(!args.paths.empty(), InvalidArgument,
             "trib plot: give a sweep directory, run directories or files of bench=scaling lines");
  if (args.paths.size() == 1 && args.output.empty() && fs::exists(fs::path(args.paths[0]) / "sweep.jsonl"))
    return sweep::plot_sweep(args.paths[0], stdout);
  const std::string output = args.output.empty() ? "curves.svg" : args.output;
  const std::string ext = fs::path(output).extension().string();
  TRIB_CHECK(ext == ".svg" || ext == ".png", InvalidArgument, "--output {}: trib plot writes .svg or .png", output);
  // Run directories draw three panels; files of bench lines add one panel per model.
  std::vector<plot::Panel> runs{{"test loss", "step", {}}, {"test accuracy", "step", {}},
                                {"training loss (training.log_every)", "step", {}}};
  std::vector<plot::ScalingPoint> points;
  std::size_t run_dirs = 0;
  for (const std::string& p : args.paths) {
    if (fs::is_directory(p)) {
      add_run(p, runs);
      ++run_dirs;
      continue;
    }
    std::ifstream in(p);
    TRIB_CHECK(in.good(), NotFound, "cannot read {}", p);
    std::vector<plot::ScalingPoint> read = plot::read_scaling_lines(in, p);
    TRIB_CHECK(!read.empty(), InvalidArgument,
               "{} has no bench=scaling lines: expected a run directory or bench/scaling.sh's output", p);
    points.insert(points.end(), read.begin(), read.end());
  }
  std::vector<plot::Panel> panels = run_dirs > 0 ? runs : std::vector<plot::Panel>{};
  for (plot::Panel& p : plot::scaling_panels(points)) panels.push_back(std::move(p));
  const std::string svg = plot::curves_svg(panels);
  if (ext == ".png") {
    plot::svg_to_png(svg, output);
  } else {
    std::ofstream out(output);
    out << svg;
    TRIB_CHECK(out.good(), IoError, "cannot write {}", output);
  }
  if (run_dirs > 0) fmt::print("{} run(s): loss and accuracy curves in {}\n", run_dirs, output);
  if (!points.empty()) fmt::print("{} scaling point(s): images/s against workers in {}\n", points.size(), output);
  return 0;
}

}  // namespace trib::app
