// A lost stage is named by its neighbours, and no wait outlasts the links' timeout.
#include <gtest/gtest.h>

#include "integration/pipeline/stage_threads.h"

namespace trib::pipeline {
namespace {

constexpr std::int64_t kFeatures = 6, kClasses = 3, kMicro = 2;

struct TwoStages {
  std::shared_ptr<net::InProcHub> hub = std::make_shared<net::InProcHub>();
  std::shared_ptr<nn::Sequential> model = testing::mlp(2, kFeatures, 8, kClasses);
  std::vector<std::unique_ptr<StageLinks>> links;
  std::vector<std::unique_ptr<EngineContext>> engines;
  std::vector<std::unique_ptr<StageModel>> models;
  std::vector<std::unique_ptr<PipelineStage>> stages;
  std::vector<VariableStore> vars{2};

  explicit TwoStages(std::chrono::milliseconds timeout) {
    std::vector<std::string> addresses;
    for (int s = 0; s < 2; ++s) {
      links.push_back(std::make_unique<StageLinks>(StageLinksOptions{testing::inproc(hub, s), s, 2, 0, timeout}));
      addresses.push_back(links.back()->listen("stage:0"));
    }
    std::thread second([&] { links[1]->connect(""); });
    links[0]->connect(addresses[1]);
    second.join();
    for (int s = 0; s < 2; ++s) {
      engines.push_back(std::make_unique<EngineContext>(EngineOptions{1, 1}));
      models.push_back(std::make_unique<StageModel>(
          StageModelOptions{model, Shape{kFeatures}, kClasses, 1, {s, s + 1}, s == 1, kMicro}, *engines.back()));
      stages.push_back(std::make_unique<PipelineStage>(PipelineStageOptions{
          models.back().get(), links[static_cast<std::size_t>(s)].get(),
          std::make_unique<update::LocalUpdate>(update::LocalUpdateOptions{
              models.back()->trainable_names(), testing::momentum_sgd(), testing::constant_lr(0.1f)}),
          config::PipelineSchedule::one_f_one_b, s, 2, 2}));
      stages.back()->start(vars[static_cast<std::size_t>(s)], nullptr);
    }
  }

  // One step on both stages at once.
  void step(std::int64_t n, const testing::Batch& b) {
    std::exception_ptr failed;
    std::thread second([&] {
      try {
        stages[1]->step(n, 10, Tensor(), Tensor(), vars[1]);
      } catch (...) {
        failed = std::current_exception();
      }
    });
    try {
      stages[0]->step(n, 10, b.features, b.labels, vars[0]);
    } catch (...) {
      second.join();
      throw;
    }
    second.join();
    if (failed) std::rethrow_exception(failed);
  }
};

TEST(PipelineLostStage, ItsNeighbourNamesIt) {
  TwoStages p(std::chrono::seconds(60));
  auto batches = testing::random_batches(2, 2 * kMicro, kFeatures, kClasses, 5);
  testing::within(60, [&] { p.step(1, batches[0]); return 0; });
  p.links[1]->close();  // stage 1's process is gone: its connection closes
  try {
    testing::within(60, [&] { return p.stages[0]->step(2, 10, batches[1].features, batches[1].labels, p.vars[0]); });
    FAIL() << "stage 0 went on without stage 1";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline stage 0: stage 1 (worker 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("was lost"), std::string::npos) << e.what();
  }
}

TEST(PipelineLostStage, ASilentStageTimesOutNamingIt) {
  TwoStages p(std::chrono::milliseconds(500));
  auto batches = testing::random_batches(1, 2 * kMicro, kFeatures, kClasses, 5);
  // Stage 1 is alive but never runs the step: stage 0 waits for its gradient no longer than the timeout.
  try {
    testing::within(60, [&] { return p.stages[0]->step(1, 10, batches[0].features, batches[0].labels, p.vars[0]); });
    FAIL() << "stage 0 finished a step without stage 1";
  } catch (const Timeout& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline stage 0: stage 1 sent no gradient for micro-batch 0 of step 1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trib::pipeline
