// `trib plot --output F.png`: the SVG rasterized by librsvg, then read back by an independent
// decoder (pypng, Debian python3-png: no libpng, no cairo) with ink where the curve runs and
// none where nothing was drawn.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

#include "plot/curves_svg.h"
#include "plot/svg_to_png.h"
#include "trib/core/error.h"

namespace trib::plot {
namespace {

namespace fs = std::filesystem;

struct TempFile {
  fs::path path = fs::temp_directory_path() / fmt::format("trib_plot_{}_{}", ::getpid(), counter++);
  ~TempFile() { fs::remove(path); }
  static inline int counter = 0;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// read_png.py's report: the size and, per box, the inked pixels and their mean colour.
struct Box {
  int inked = -1, r = 0, g = 0, b = 0;
};
struct Decoded {
  int width = -1, height = -1;
  std::vector<Box> boxes;
  std::string said;
};

Decoded decode(const fs::path& png, const std::vector<std::string>& boxes) {
  TempFile out;
  std::string command = fmt::format("/usr/bin/python3 {}/tests/unit/plot/read_png.py {}", TRIB_SOURCE_DIR, png.string());
  for (const std::string& b : boxes) command += " " + b;
  const int status = std::system((command + " > " + out.path.string() + " 2>&1").c_str());
  Decoded d;
  d.said = read_all(out.path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return d;
  std::istringstream in(d.said);
  std::string word, box;
  in >> word >> d.width >> d.height;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    Box b;
    in >> word >> box >> word >> b.inked >> word >> b.r >> b.g >> b.b;
    d.boxes.push_back(b);
  }
  return d;
}

TEST(SvgToPng, WritesAPngOfTheSvgsSizeThatAnIndependentReaderDecodesWithTheCurveInked) {
  ASSERT_TRUE(fs::exists("/usr/bin/python3")) << "scripts/install-deps.sh test installs python3 and python3-png";
  // One rising curve in one panel: from the plot area's bottom left (60, 290) to its top
  // right (440, 30), in the first colour (#1f77b4: blue).
  Panel p{"rising", "step", {{"run", {{0, 0}, {10, 10}}}}};
  const std::string svg = curves_svg({p});
  TempFile png;
  svg_to_png(svg, png.path.string());

  const std::string bytes = read_all(png.path);
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << "the PNG signature";
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  auto be32 = [&](std::size_t at) {
    return (unsigned(std::uint8_t(bytes[at])) << 24) | (unsigned(std::uint8_t(bytes[at + 1])) << 16) |
           (unsigned(std::uint8_t(bytes[at + 2])) << 8) | unsigned(std::uint8_t(bytes[at + 3]));
  };
  // The SVG's own width and height.
  EXPECT_NE(svg.find(fmt::format("width=\"{}\" height=\"{}\"", be32(16), be32(20))), std::string::npos)
      << be32(16) << "x" << be32(20) << "\n" << svg;
  EXPECT_EQ(be32(16), 460u);

  // The curve's midpoint (250, 160), a point of white inside the plot area above the curve
  // (100, 100), and the panel's frame (x = 60).
  const Decoded d = decode(png.path, {"246,156,254,164", "95,95,105,105", "58,120,62,130"});
  ASSERT_EQ(d.boxes.size(), 3u) << d.said;
  EXPECT_EQ(d.width, int(be32(16))) << d.said;
  EXPECT_EQ(d.height, int(be32(20))) << d.said;
  EXPECT_GE(d.boxes[0].inked, 5) << "the curve is drawn at its midpoint\n" << d.said;
  EXPECT_GT(d.boxes[0].b, d.boxes[0].r + 40) << "in blue\n" << d.said;
  EXPECT_EQ(d.boxes[1].inked, 0) << "nothing drawn above the curve\n" << d.said;
  EXPECT_GE(d.boxes[2].inked, 5) << "the frame\n" << d.said;
}

TEST(SvgToPng, NamesTheFileWhenTheSvgIsUnreadableOrTheFileUnwritable) {
  TempFile png;
  try {
    svg_to_png("<svg not closed", png.path.string());
    FAIL() << "a broken SVG was rasterized";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(png.path.string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(png.path));
  const std::string nowhere = "/no/such/dir/c.png";
  try {
    svg_to_png(curves_svg({Panel{"p", "x", {}}}), nowhere);
    FAIL() << "wrote into a missing directory";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(nowhere), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trib::plot
