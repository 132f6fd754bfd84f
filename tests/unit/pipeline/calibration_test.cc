// The planner's calibration pass measures each layer as a one-layer stage: what it records
// (LayerCost), not how fast this machine is.
#include <gtest/gtest.h>

#include "trib/nn/dense.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/pipeline/planner.h"

namespace trib::pipeline {
namespace {

TEST(PlannerCalibration, MeasuresEachLayersPassesAndSizes) {
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = 32, .activation = nn::Activation::relu}));
  model->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = 32, .activation = nn::Activation::relu}));
  model->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = 4}));
  EngineContext engine(EngineOptions{1, 1});
  const std::vector<LayerCost> c = calibrate(LayerCalibration{model, Shape{16}, 4, 1, 8, make_optimizer(OptimizerConfig{}),
                                                              make_schedule(ScheduleConfig{})},
                                             engine);
  ASSERT_EQ(c.size(), 3u);
  for (std::size_t i = 0; i < c.size(); ++i) {
    EXPECT_GT(c[i].ms, 0) << i;
    EXPECT_LE(c[i].forward_ms, c[i].ms) << i;
  }
  // Layers before the last run a separate forward pass, part of their ms; the model's last
  // layer, only ever in the last stage, is measured without one.
  EXPECT_GT(c[0].forward_ms, 0);
  EXPECT_GT(c[1].forward_ms, 0);
  EXPECT_EQ(c[2].forward_ms, 0);
  EXPECT_EQ(c[0].parameter_bytes, (16 * 32 + 32) * 4);
  EXPECT_EQ(c[2].parameter_bytes, (32 * 4 + 4) * 4);
  EXPECT_EQ(c[1].input_bytes, 8 * 32 * 4);   // one micro-batch of 8
  EXPECT_EQ(c[2].output_bytes, 8 * 4 * 4);
}

TEST(PlannerCalibration, TimesWholeStagesBeforeAndAtTheEnd) {
  auto model = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 3; ++i) model->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = 32, .activation = nn::Activation::relu}));
  model->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = 4}));
  EngineContext engine(EngineOptions{1, 1});
  const LayerCalibration what{model, Shape{16}, 4, 1, 8, make_optimizer(OptimizerConfig{}), make_schedule(ScheduleConfig{})};
  // A stage before the last (its own forward pass, an output gradient in) and the last (the
  // loss on labels): both build and run; their time is the machine's, only its sign is asserted.
  for (const StageRange r : {StageRange{0, 2}, StageRange{2, 4}, StageRange{0, 4}}) {
    const double ms = calibrate_stage(what, engine, r);
    EXPECT_GT(ms, 0) << r.begin << "-" << r.end;
    EXPECT_LT(ms, 1e6) << r.begin << "-" << r.end;
  }
}

}  // namespace
}  // namespace trib::pipeline
