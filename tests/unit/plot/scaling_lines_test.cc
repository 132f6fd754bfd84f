// bench/scaling.sh's lines read back (tests/unit/plot/scaling_lines.txt: lines of
// docs/scaling.md's runs with a progress line and a bench=plan line among them) and drawn as
// images/s against workers, one panel per model, one curve per (strategy, link, batch).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "plot/scaling_lines.h"
#include "trib/core/error.h"

namespace trib::plot {
namespace {

std::vector<ScalingPoint> fixture() {
  std::ifstream in(std::string(TRIB_SOURCE_DIR) + "/tests/unit/plot/scaling_lines.txt");
  EXPECT_TRUE(in.good());
  return read_scaling_lines(in, "scaling_lines.txt");
}

const Curve* find(const Panel& p, const std::string& label) {
  for (const Curve& c : p.curves)
    if (c.label == label) return &c;
  return nullptr;
}

TEST(ScalingLines, ReadsEveryScalingLineAndSkipsTheRest) {
  const std::vector<ScalingPoint> points = fixture();
  ASSERT_EQ(points.size(), 10u);
  EXPECT_EQ(points[0].model, "cnn");
  EXPECT_EQ(points[0].strategy, "allreduce");
  EXPECT_EQ(points[0].workers, 1);
  EXPECT_EQ(points[0].batch, 64);
  EXPECT_DOUBLE_EQ(points[0].link_gbps, 1);
  EXPECT_DOUBLE_EQ(points[0].images_per_s, 401);
  EXPECT_DOUBLE_EQ(points[0].peer_images_per_s, 184);
  EXPECT_DOUBLE_EQ(points[0].cpus_per_host, 0.25);
  EXPECT_EQ(points[4].strategy, "ps1_async") << "strategy=ps mode=async ps=1 is scaling.sh's ps1_async";
}

TEST(ScalingLines, OnePanelPerModelOneCurvePerStrategyLinkAndBatchWithDdpDashed) {
  const std::vector<Panel> panels = scaling_panels(fixture());
  ASSERT_EQ(panels.size(), 2u);
  EXPECT_NE(panels[0].title.find("cnn"), std::string::npos);
  EXPECT_NE(panels[1].title.find("mlp"), std::string::npos);
  EXPECT_EQ(panels[0].xticks, (std::vector<double>{1, 2, 4, 8}));
  EXPECT_TRUE(panels[0].y_from_zero);

  const Curve* ring = find(panels[0], "allreduce, 1 Gbit/s, batch 64");
  ASSERT_NE(ring, nullptr);
  // Figures of one-core machines: 401 images/s measured on a quarter of a core.
  ASSERT_EQ(ring->xy.size(), 4u);
  EXPECT_EQ(ring->xy[0], (std::pair<double, double>{1, 401 / 0.25}));
  EXPECT_EQ(ring->xy[3], (std::pair<double, double>{8, 163 / 0.15}));
  EXPECT_FALSE(ring->dashed);
  ASSERT_NE(find(panels[0], "ps1_async, 1 Gbit/s, batch 64"), nullptr);
  const Curve* ddp = find(panels[0], "torch DDP, 1 Gbit/s, batch 64");
  ASSERT_NE(ddp, nullptr);
  EXPECT_TRUE(ddp->dashed);
  EXPECT_EQ(ddp->xy.size(), 4u);
  EXPECT_EQ(panels[0].curves.size(), 3u);
  // The MLP's DDP printed 0 at 2 workers (it failed): a point left out, not drawn at 0.
  const Curve* mlp_ddp = find(panels[1], "torch DDP, 10 Gbit/s, batch 256");
  ASSERT_NE(mlp_ddp, nullptr);
  EXPECT_EQ(mlp_ddp->xy.size(), 1u);
}

TEST(ScalingLines, ABadLineFailsNamingTheLineAndTheField) {
  std::istringstream missing("bench=scaling model=cnn strategy=allreduce compression=none ps=0 link_gbps=1 batch=64 "
                             "ours_images_per_s=10\n");
  try {
    read_scaling_lines(missing, "lines.txt");
    FAIL() << "a line without workers= was read";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("lines.txt line 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("workers="), std::string::npos) << e.what();
  }
  std::istringstream bad("\nbench=scaling model=cnn strategy=allreduce workers=two ps=0 link_gbps=1 batch=64 "
                         "ours_images_per_s=10\n");
  try {
    read_scaling_lines(bad, "lines.txt");
    FAIL() << "workers=two was read";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("lines.txt line 2: workers=two is not a number"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trib::plot
