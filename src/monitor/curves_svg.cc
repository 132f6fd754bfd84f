#include "trib/monitor/curves_svg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace trib::monitor {

namespace {

constexpr double kWidth = 460, kHeight = 320, kLeft = 60, kRight = 20, kTop = 30, kBottom = 60;
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
  const double w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", kLeft, kTop,
                     w, h);
  if (!std::isfinite(x0)) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\">no data</text>\n</g>\n", kLeft + 10, kTop + h / 2);
    return out;
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * w; };
  auto py = [&](double y) { return kTop + (1 - (y - y0) / (y1 - y0)) * h; };
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.4g}</text>\n", kLeft - 4, kTop + 10, y1);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.4g}</text>\n", kLeft - 4, kTop + h, y0);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{:.4g}</text>\n", kLeft, kTop + h + 14, x0);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.4g}</text>\n", kLeft + w,
                     kTop + h + 14, x1);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", kLeft + w / 2,
                     kTop + h + 14, escape(p.xlabel));
  for (std::size_t i = 0; i < p.curves.size(); ++i) {
    const Curve& c = p.curves[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string points;
    for (const auto& [x, y] : c.xy)
      if (std::isfinite(x) && std::isfinite(y)) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", color, points);
    // The legend: two rows under the axis.
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{}\">{}</text>\n",
                       kLeft + 130 * double(i / 2), kTop + h + 30 + 12 * double(i % 2), color, escape(c.label));
  }
  return out + "</g>\n";
}

}  // namespace

std::string curves_svg(const std::vector<Panel>& panels) {
  const double width = kWidth * double(std::max<std::size_t>(1, panels.size()));
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, kHeight);
  for (std::size_t i = 0; i < panels.size(); ++i) out += panel_svg(panels[i], kWidth * double(i));
  return out + "</svg>\n";
}

}  // namespace trib::monitor
