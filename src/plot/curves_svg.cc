#include "plot/curves_svg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace trib::plot {

namespace {

// A panel's frame; its legend goes under the axis in as many rows as its series need.
constexpr double kWidth = 460, kPlotHeight = 320 - 60, kLeft = 60, kRight = 20, kTop = 30, kAxisBelow = 24;
constexpr double kRowHeight = 13, kCharWidth = 6.2, kSample = 18;
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// An axis label: four significant digits, whole numbers written out up to a billion.
std::string number(double v) {
  if (std::abs(v) >= 1e4 && std::abs(v) < 1e9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

// The legend's columns: as wide as the longest label (at least 130 px), as many as fit.
struct Legend {
  double column = 130;
  std::size_t columns = 1, rows = 0;
};

Legend legend_of(const Panel& p) {
  std::size_t longest = 0;
  for (const Curve& c : p.curves) longest = std::max(longest, c.label.size());
  Legend l;
  l.column = std::clamp(kSample + 4 + double(longest) * kCharWidth + 10, 130.0, kWidth - 10);
  l.columns = std::max<std::size_t>(1, std::size_t((kWidth - 10) / l.column));
  l.rows = (p.curves.size() + l.columns - 1) / l.columns;
  return l;
}

double panel_height(const Panel& p) { return kTop + kPlotHeight + kAxisBelow + kRowHeight * double(legend_of(p).rows) + 8; }

std::string panel_svg(const Panel& p, double x_offset) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Curve& c : p.curves)
    for (const auto& [x, y] : c.xy) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  std::string out = fmt::format("<g transform=\"translate({},0)\">\n", x_offset);
  out += fmt::format("<text x=\"{}\" y=\"18\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + (kWidth - kLeft - kRight) / 2, escape(p.title));
  const double w = kWidth - kLeft - kRight, h = kPlotHeight;
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", kLeft, kTop,
                     w, h);
  if (!std::isfinite(x0)) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\">no data</text>\n</g>\n", kLeft + 10, kTop + h / 2);
    return out;
  }
  if (p.y_from_zero) y0 = std::min(0.0, y0), y1 = std::max(0.0, y1) * 1.05;
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;
  if (y1 == y0) {  // a flat curve: mid-axis, in a small range around it
    const double pad = y0 != 0 ? std::abs(y0) * 0.1 : 1;
    y0 -= pad, y1 += pad;
  }
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * w; };
  auto py = [&](double y) { return kTop + (1 - (y - y0) / (y1 - y0)) * h; };
  if (p.y_from_zero) {
    // Gridlines at round values (1, 2 or 5 times a power of ten), about five of them.
    const double raw = (y1 - y0) / 5, power = std::pow(10, std::floor(std::log10(raw)));
    const double step = raw / power < 2 ? 2 * power : raw / power < 5 ? 5 * power : 10 * power;
    for (double k = std::ceil(y0 / step); k * step <= y1 * (1 + 1e-9); ++k) {
      const double t = k * step;
      out += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>\n"
                         "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5}</text>\n",
                         kLeft, py(t), kLeft + w, kLeft - 4, py(t) + 4, number(t));
    }
  } else {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", kLeft - 4, kTop + 10,
                       number(y1));
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", kLeft - 4, kTop + h,
                       number(y0));
  }
  if (p.xticks.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", kLeft, kTop + h + 14, number(x0));
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", kLeft + w,
                       kTop + h + 14, number(x1));
  } else {
    for (double t : p.xticks)
      out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>\n"
                         "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"11\" text-anchor=\"middle\">{4}</text>\n",
                         px(t), kTop, kTop + h, kTop + h + 14, number(t));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", kLeft + w / 2,
                     kTop + h + (p.xticks.empty() ? 14 : 24), escape(p.xlabel));
  const Legend legend = legend_of(p);
  for (std::size_t i = 0; i < p.curves.size(); ++i) {
    const Curve& c = p.curves[i];
    const char* color = kColors[i % std::size(kColors)];
    const std::string dash = c.dashed ? " stroke-dasharray=\"5,3\"" : "";
    std::string points;
    for (const auto& [x, y] : c.xy)
      if (std::isfinite(x) && std::isfinite(y)) {
        points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
        if (p.markers)
          out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", px(x), py(y), color);
      }
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{} points=\"{}\"/>\n", color, dash,
                       points);
    const double lx = 10 + legend.column * double(i % legend.columns);
    const double ly = kTop + h + kAxisBelow + 10 + kRowHeight * double(i / legend.columns);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", lx, ly - 4,
                       lx + kSample, ly - 4, color, dash);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{}\">{}</text>\n", lx + kSample + 4, ly, color,
                       escape(c.label));
  }
  return out + "</g>\n";
}

}  // namespace

std::string curves_svg(const std::vector<Panel>& panels) {
  const double width = kWidth * double(std::max<std::size_t>(1, panels.size()));
  double height = kTop + kPlotHeight + kAxisBelow + 8;
  for (const Panel& p : panels) height = std::max(height, panel_height(p));
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  for (std::size_t i = 0; i < panels.size(); ++i) out += panel_svg(panels[i], kWidth * double(i));
  return out + "</svg>\n";
}

}  // namespace trib::plot
