// Derived settings apply only where the job left the key out, and the resolved YAML (the run
// directory's config.yaml) holds them: reading it back gives the settings that ran.
#include <gtest/gtest.h>

#include <memory>

#include "config/derived_settings.h"
#include "trib/optim/schedule_config.h"

namespace trib::config {
namespace {

const char* kJob = R"(
model:
  input: [4]
  classes: 2
  layers: [{type: dense, units: 2}]
data:
  format: csv
  train: {path: a.csv}
  test: {path: b.csv}
optimizer: {name: sgd, lr: 0.1}
training: {steps: 1000, batch: 32}
)";

JobConfig job(const std::vector<std::string>& overrides) { return parse_job_config(kJob, "job.yaml", overrides); }

// What a run directory's config.yaml, read back, runs.
JobConfig reread(const JobConfig& j) { return parse_job_config(j.resolved_yaml, "config.yaml"); }

TEST(DerivedSettings, AllreduceScalesLinearlyWithAWarmUpFromTheSingleWorkerRate) {
  JobConfig j = derive_settings(job({"strategy.name=allreduce"}), {.workers = 4, .total_steps = 1000});
  EXPECT_TRUE(j.schedule.linear_scaling);
  EXPECT_EQ(j.schedule.global_batch, 128);
  EXPECT_EQ(j.schedule.base_batch, 32);
  EXPECT_EQ(j.schedule.warmup_steps, 100);
  auto s = make_schedule(j.schedule);
  EXPECT_FLOAT_EQ(s->lr(0), 0.1f);    // the warm-up starts at the single-worker rate...
  EXPECT_FLOAT_EQ(s->lr(100), 0.4f);  // ...and reaches 4x after 100 steps
  EXPECT_NEAR(s->lr(50), 0.25f, 1e-6);
  // config.yaml holds every derived value.
  JobConfig again = reread(j);
  EXPECT_TRUE(again.schedule.linear_scaling);
  EXPECT_EQ(again.schedule.global_batch, 128);
  EXPECT_EQ(again.schedule.warmup_steps, 100);
  EXPECT_FLOAT_EQ(again.schedule.warmup_start_factor, 0.25f);
}

TEST(DerivedSettings, AnExplicitLinearScalingFalseIsHonoured) {
  JobConfig j = derive_settings(job({"strategy.name=allreduce", "schedule.linear_scaling=false"}), {4, 1000});
  EXPECT_FALSE(j.schedule.linear_scaling);
  EXPECT_EQ(j.schedule.warmup_steps, 0) << "no warm-up the job did not ask for";
  auto s = make_schedule(j.schedule);
  EXPECT_FLOAT_EQ(s->lr(0), 0.1f);
  EXPECT_FLOAT_EQ(s->lr(500), 0.1f);
  EXPECT_FALSE(reread(j).schedule.linear_scaling);
}

TEST(DerivedSettings, TheJobsOwnWarmUpWins) {
  JobConfig j = derive_settings(job({"strategy.name=allreduce", "schedule.warmup_steps=10"}), {2, 1000});
  EXPECT_EQ(j.schedule.warmup_steps, 10);
  EXPECT_FLOAT_EQ(make_schedule(j.schedule)->lr(10), 0.2f);
  // An explicit 0 is the job's choice too: no warm-up.
  JobConfig none = derive_settings(job({"strategy.name=allreduce", "schedule.warmup_steps=0"}), {2, 1000});
  EXPECT_EQ(none.schedule.warmup_steps, 0);
  EXPECT_FLOAT_EQ(make_schedule(none.schedule)->lr(0), 0.2f);
}

TEST(DerivedSettings, OtherStrategiesAndOneWorkerDeriveNoScaling) {
  EXPECT_FALSE(derive_settings(job({"strategy.name=local"}), {1, 1000}).schedule.linear_scaling);
  EXPECT_FALSE(derive_settings(job({"strategy.name=allreduce"}), {1, 1000}).schedule.linear_scaling);
  // Asked for by the job: the batch sizes are filled in.
  JobConfig j = derive_settings(job({"schedule.linear_scaling=true"}), {3, 1000});
  EXPECT_EQ(j.schedule.global_batch, 96);
  EXPECT_EQ(j.schedule.warmup_steps, 0);
  EXPECT_FLOAT_EQ(make_schedule(j.schedule)->lr(0), 0.3f);
}

TEST(DerivedSettings, CosineRunsOverTheStepsAfterTheWarmUp) {
  JobConfig j = derive_settings(job({"schedule.name=cosine", "schedule.warmup_steps=100"}), {1, 1000});
  EXPECT_EQ(j.schedule.total_steps, 900);
  EXPECT_EQ(reread(j).schedule.total_steps, 900);
  EXPECT_EQ(derive_settings(job({"schedule.name=cosine", "schedule.total_steps=50"}), {1, 1000}).schedule.total_steps,
            50);
  EXPECT_THROW(derive_settings(job({"schedule.name=cosine"}), {1, 0}), InvalidArgument);
}

TEST(DerivedSettings, IsIdempotent) {
  JobConfig once = derive_settings(job({"strategy.name=allreduce", "schedule.name=cosine"}), {4, 1000});
  JobConfig twice = derive_settings(once, {4, 1000});
  EXPECT_EQ(once.resolved_yaml, twice.resolved_yaml);
  EXPECT_EQ(twice.schedule.total_steps, 900);
}

TEST(JobConfigKeys, GivenKeysAreKnownAndDocumentedKeysAccepted) {
  JobConfig j = job({"schedule.linear_scaling=false", "schedule.global_batch=64", "schedule.base_batch=32"});
  EXPECT_TRUE(j.has("schedule.linear_scaling"));
  EXPECT_TRUE(j.has("training.batch"));
  EXPECT_FALSE(j.has("schedule.warmup_steps"));
  EXPECT_EQ(j.schedule.global_batch, 64) << "schedule_config.h documents global_batch";
}

TEST(JobConfigKeys, StrategyNamesBecomeEnums) {
  JobConfig j = job({"strategy.name=ps", "strategy.mode=bounded", "strategy.placement=partitioned",
                     "strategy.compression=bf16"});
  EXPECT_EQ(j.strategy.name, StrategyName::ps);
  EXPECT_EQ(j.strategy.mode, PsMode::bounded);
  EXPECT_EQ(j.strategy.placement, PsPlacement::partitioned);
  EXPECT_EQ(j.strategy.compression, Compression::bf16);
  EXPECT_EQ(to_string(j.strategy.mode), "bounded");
  try {
    job({"strategy.mode=eventual"});
    ADD_FAILURE() << "eventual accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.mode 'eventual' is not supported: expected sync, async, bounded, "
                                         "averaging"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trib::config
