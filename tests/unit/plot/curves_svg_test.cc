// The SVG `trib plot` writes: one panel per figure side by side, a legend under each that
// grows with its series instead of running off the panel, and the scaling plots' options
// (axis from zero, point markers, ticks at the measured x values, dashed peer curves).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "plot/curves_svg.h"

namespace trib::plot {
namespace {

double attribute(const std::string& svg, const std::string& name) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(svg, m, std::regex("<svg[^>]* " + name + "=\"([0-9.]+)\""))) << svg;
  return m.empty() ? -1 : std::stod(m[1]);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Panel with_curves(int n, const std::string& label) {
  Panel p{"p", "step", {}};
  for (int i = 0; i < n; ++i) p.curves.push_back({label + std::to_string(i), {{0, double(i)}, {1, double(i + 1)}}});
  return p;
}

TEST(CurvesSvg, PanelsSideBySideWithTheirTitlesAndEscapedLabels) {
  const std::string svg = curves_svg({with_curves(1, "a<b"), Panel{"empty", "step", {}}});
  EXPECT_EQ(attribute(svg, "width"), 920);
  EXPECT_NE(svg.find("a&lt;b0"), std::string::npos) << svg;
  EXPECT_NE(svg.find("no data"), std::string::npos) << "the empty panel says so\n" << svg;
  EXPECT_EQ(count(svg, "<polyline"), 1u);
}

TEST(CurvesSvg, TheLegendGrowsDownwardsWithItsSeriesAndStaysInsideThePanel) {
  const std::string few = curves_svg({with_curves(2, "run")});
  const std::string many = curves_svg({with_curves(24, "allreduce_bf16, 10 Gbit/s, batch 256 #")});
  EXPECT_GT(attribute(many, "height"), attribute(few, "height") + 100) << many;
  // Every legend entry starts inside the panel's width.
  std::regex legend("<text x=\"([0-9.]+)\" y=\"([0-9.]+)\" font-size=\"11\" fill=");
  int entries = 0;
  double lowest = 0;
  for (std::sregex_iterator it(many.begin(), many.end(), legend), end; it != end; ++it, ++entries) {
    EXPECT_LT(std::stod((*it)[1]), 460 - 100) << (*it)[0];
    lowest = std::max(lowest, std::stod((*it)[2]));
  }
  EXPECT_EQ(entries, 24);
  EXPECT_LT(lowest, attribute(many, "height")) << "the last row is inside the image";
}

TEST(CurvesSvg, ScalingOptionsDrawMarkersTicksAZeroBasedAxisAndDashedPeers) {
  Panel p{"cnn", "workers", {{"ours", {{1, 100}, {2, 150}, {4, 200}}}, {"torch DDP", {{1, 120}, {2, 140}}, true}}};
  p.y_from_zero = p.markers = true;
  p.xticks = {1, 2, 4};
  const std::string svg = curves_svg({p});
  EXPECT_EQ(count(svg, "<circle"), 5u) << svg;
  EXPECT_EQ(count(svg, "stroke-dasharray"), 2u) << "the peer's curve and its legend sample\n" << svg;
  EXPECT_NE(svg.find(">0</text>"), std::string::npos) << "the axis starts at 0\n" << svg;
  for (const char* tick : {">1</text>", ">2</text>", ">4</text>"}) EXPECT_NE(svg.find(tick), std::string::npos) << tick;
}

TEST(CurvesSvg, AFlatCurveIsDrawnMidAxis) {
  Panel p{"flat", "step", {{"c", {{0, 0.83}, {10, 0.83}}}}};
  const std::string svg = curves_svg({p});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("points=\"[0-9.]+,([0-9.]+) "))) << svg;
  EXPECT_NEAR(std::stod(m[1]), 30 + 260 / 2.0, 1) << svg;
}

}  // namespace
}  // namespace trib::plot
