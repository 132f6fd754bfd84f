// The strategy factory builds what the job names, from the job's typed settings, with the
// job's training.clip_norm, and refuses links that do not fit the strategy.
#include <gtest/gtest.h>

#include <thread>

#include "trib/collectives/strategy_allreduce.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule.h"
#include "trib/strategy/make_strategy.h"
#include "trib/update/local_update.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::strategy {
namespace {

const char* kJob = R"(
model:
  input: [2]
  classes: 2
  layers: [{type: dense, units: 2}]
data:
  format: csv
  train: {path: unused.csv}
  test: {path: unused.csv}
optimizer: {name: sgd, lr: 0.1}
training: {steps: 10, batch: 4, clip_norm: 5}
)";

config::JobConfig job(const std::vector<std::string>& overrides) {
  return config::parse_job_config(kJob, "strategy.yaml", overrides);
}

// w = [0, 0] and a gradient of norm 50: clipped to norm 5, SGD at 0.1 moves w by [-0.3, -0.4].
void expect_clipped_step(update::UpdateStrategy& u) {
  VariableStore vars;
  vars.set("w", Tensor::from_vector(Shape{2}, std::vector<float>{0, 0}));
  std::vector<update::GradTensor> grads = {{Tensor::from_vector(Shape{2}, std::vector<float>{30, 40}), {}}};
  ASSERT_TRUE(u.apply(0, grads, vars));
  EXPECT_NEAR(vars.get("w").data<float>()[0], -0.3f, 1e-6);
  EXPECT_NEAR(vars.get("w").data<float>()[1], -0.4f, 1e-6);
}

train::UpdateInputs inputs(const config::JobConfig& j) {
  return {j, {"w"}, make_optimizer(j.optimizer), make_schedule(j.schedule)};
}

TEST(MakeStrategy, LocalClipsByTheJobsClipNorm) {
  config::JobConfig j = job({"strategy.name=local"});
  std::unique_ptr<update::UpdateStrategy> u = make_update_strategy(inputs(j), {});
  ASSERT_NE(dynamic_cast<update::LocalUpdate*>(u.get()), nullptr);
  expect_clipped_step(*u);
}

TEST(MakeStrategy, AllreduceRunsOverTheGroupWithTheJobsSettings) {
  config::JobConfig j = job({"strategy.name=allreduce", "strategy.compression=bf16"});
  collectives::testing::ThreadGroup g(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      WorkerLinks links{r, 2, {}, std::shared_ptr<collectives::Group>(std::move(g.groups[r]))};
      std::unique_ptr<update::UpdateStrategy> u = make_update_strategy(inputs(j), links);
      auto* a = dynamic_cast<collectives::AllreduceUpdate*>(u.get());
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->group().size(), 2);
      expect_clipped_step(*u);  // both ranks push the same gradient: its average is itself
      EXPECT_NE(u->report().find("bf16 compression"), std::string::npos) << u->report();
      u->finish();
    });
  for (auto& t : ranks) t.join();
}

TEST(MakeStrategy, LinksThatDoNotFitTheStrategyAreRefused) {
  try {
    make_update_strategy(inputs(job({"strategy.name=allreduce"})), {});
    ADD_FAILURE() << "allreduce without a group";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("has no group"), std::string::npos) << e.what();
  }
  try {
    make_update_strategy(inputs(job({"strategy.name=ps"})), {});
    ADD_FAILURE() << "ps without servers";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("0 server connection(s) but cluster.ps is 0"), std::string::npos) << e.what();
  }
}

TEST(MakeStrategy, PsServerOptionsComeFromTheTypedSettings) {
  ps::PsServerOptions o = ps_server_options(job({"strategy.name=ps", "strategy.mode=bounded", "strategy.staleness=3",
                                                 "cluster.ps=2", "cluster.workers=3",
                                                 "strategy.placement=round_robin"}),
                                            1, 3);
  EXPECT_EQ(o.index, 1);
  EXPECT_EQ(o.workers, 3);
  EXPECT_EQ(o.mode, ps::Mode::bounded);
  EXPECT_EQ(o.staleness, 3);
  EXPECT_EQ(o.placement.num_ps, 2);
  EXPECT_EQ(o.variables.size(), 2u);  // the dense layer's w and b
}

}  // namespace
}  // namespace trib::strategy
