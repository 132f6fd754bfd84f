// Sweep files: defaults, the trials a search plans, and bad input named with suggestions.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "trib/core/error.h"
#include "trib/sweep/asha.h"
#include "trib/sweep/sweep_config.h"

namespace trib::sweep {
namespace {

const std::string kExamples = std::string(TRIB_SOURCE_DIR) + "/examples";

SweepConfig parse(const std::string& text) { return parse_sweep_config(text, "s.yaml", kExamples); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {  // InvalidArgument, or NotFound for a missing job
    return e.what();
  }
  return "";
}

const std::string kGrid = R"(
job: fashion_mlp.yaml
search: grid
space:
  optimizer.lr: [0.001, 0.01]
  training.batch: [32, 64, 128]
  model.layers.1.units: [64, 128]
)";

TEST(SweepConfig, GridPlansEveryPoint) {
  SweepConfig c = parse(kGrid);
  EXPECT_EQ(c.job, kExamples + "/fashion_mlp.yaml");
  EXPECT_EQ(c.metric, "accuracy");
  EXPECT_TRUE(c.maximize);
  EXPECT_EQ(planned_trials(c), 12);
  EXPECT_EQ(describe(trial_params(c, 0)), "lr=0.001 batch=32 units1=64");
  EXPECT_EQ(describe(trial_params(c, 11)), "lr=0.01 batch=128 units1=128");
}

TEST(SweepConfig, AshaOverAGridSearchesTheGridsPoints) {
  SweepConfig c = parse(kGrid + "steps: 900\nasha: {reduction_factor: 3}\n" + "\n");
  EXPECT_EQ(c.search, SearchKind::grid);
  SweepConfig a = parse(std::string(kGrid).replace(kGrid.find("grid"), 4, "asha") + "steps: 900\n");
  EXPECT_EQ(a.search, SearchKind::asha);
  EXPECT_EQ(planned_trials(a), 12);
  EXPECT_EQ(a.grace_period, 100);  // steps / 9: three rungs below 900
  // Every grid point once, in a seeded order (not the grid's: its first trials would all
  // share one corner of the space).
  std::set<std::string> seen;
  bool reordered = false;
  for (int i = 0; i < 12; ++i) {
    seen.insert(describe(trial_params(a, i)));
    reordered |= describe(trial_params(a, i)) != describe(trial_params(c, i));
    EXPECT_EQ(describe(trial_params(a, i)), describe(trial_params(a, i)));
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_TRUE(reordered);
}

TEST(SweepConfig, LossIsMinimisedByDefault) {
  SweepConfig c = parse("job: fashion_mlp.yaml\nmetric: loss\nbudget: {trials: 4}\nspace: {optimizer.lr: {loguniform: [1.0e-4, 1.0e-2]}}\n");
  EXPECT_FALSE(c.maximize);
  EXPECT_EQ(c.search, SearchKind::random);
  EXPECT_EQ(planned_trials(c), 4);
}

TEST(SweepConfig, UnknownSpaceKeysAreNamedWithTheJobsSuggestion) {
  std::string e = error_of("job: fashion_mlp.yaml\nsearch: grid\nspace: {optimizer.lrr: [0.1]}\n");
  EXPECT_NE(e.find("space.optimizer.lrr"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'optimizer.lr'"), std::string::npos) << e;
  e = error_of("job: fashion_mlp.yaml\nsearch: grid\nspace: {model.layers.1.unitz: [8]}\n");
  EXPECT_NE(e.find("did you mean 'model.layers[1].units'"), std::string::npos) << e;
}

TEST(SweepConfig, BadValuesInTheSpaceAreNamed) {
  std::string e = error_of("job: fashion_mlp.yaml\nsearch: grid\nspace: {training.batch: [32, 0]}\n");
  EXPECT_NE(e.find("space.training.batch = 0"), std::string::npos) << e;
  e = error_of("job: fashion_mlp.yaml\nbudget: {trials: 2}\nspace: {optimizer.lr: {loguniform: [0, 1]}}\n");
  EXPECT_NE(e.find("loguniform needs low > 0"), std::string::npos) << e;
  e = error_of("job: fashion_mlp.yaml\nbudget: {trials: 2}\nspace: {optimizer.lr: {logunifrom: [0.1, 1]}}\n");
  EXPECT_NE(e.find("did you mean 'loguniform'"), std::string::npos) << e;
  e = error_of("job: fashion_mlp.yaml\nbudget: {trials: 2}\nspace: {optimizer.lr: {uniform: [1, 0.1]}}\n");
  EXPECT_NE(e.find("low < high"), std::string::npos) << e;
}

TEST(SweepConfig, BadSweepKeysAreNamedWithSuggestions) {
  EXPECT_NE(error_of(kGrid + "slot: 2\n").find("did you mean 'slots'"), std::string::npos);
  EXPECT_NE(error_of(kGrid + "metric: acuracy\n").find("did you mean 'accuracy'"), std::string::npos);
  EXPECT_NE(error_of(std::string(kGrid).replace(kGrid.find("grid"), 4, "asah")).find("did you mean 'asha'"),
            std::string::npos);
  EXPECT_NE(error_of("job: fashion_mlp.yaml\nsearch: grid\nspace: {optimizer.lr: {uniform: [0.1, 1]}}\n")
                .find("grid needs every space key to be a choice list"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kGrid).replace(kGrid.find("grid"), 4, "asha")).find("asha needs steps"),
            std::string::npos);
  EXPECT_NE(error_of("job: missing.yaml\nsearch: grid\nspace: {optimizer.lr: [0.1]}\n").find("missing.yaml"),
            std::string::npos);
}

}  // namespace
}  // namespace trib::sweep

namespace trib::sweep {
namespace {

TEST(SweepConfig, TheExampleSweepReads) {
  SweepConfig c = load_sweep_config(kExamples + "/sweep_mlp.yaml");
  EXPECT_EQ(c.search, SearchKind::asha);
  EXPECT_EQ(planned_trials(c), 16);
  EXPECT_EQ(c.job, kExamples + "/fashion_mlp_dropout.yaml");
  EXPECT_EQ(Asha(c.grace_period, c.steps, c.reduction_factor, c.maximize).rungs(), (std::vector<std::int64_t>{300, 900}));
}

}  // namespace
}  // namespace trib::sweep

namespace trib::sweep {
namespace {

TEST(SweepConfig, AshaRuleIsStoppingByDefaultAndBadValuesAreNamed) {
  const std::string asha = std::string(kGrid).replace(kGrid.find("grid"), 4, "asha") + "steps: 90\n";
  EXPECT_EQ(parse(asha).asha_rule, AshaRule::stopping);
  EXPECT_EQ(parse(asha + "asha: {rule: promotion}\n").asha_rule, AshaRule::promotion);
  EXPECT_EQ(parse(asha + "asha: {rule: stopping, grace_period: 10}\n").asha_rule, AshaRule::stopping);
  const std::string bad = error_of(asha + "asha: {rule: promote}\n");
  EXPECT_NE(bad.find("unknown asha.rule 'promote'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("did you mean 'promotion'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("expected stopping or promotion"), std::string::npos) << bad;
  EXPECT_EQ(bad.find('\n'), std::string::npos) << bad;  // one line
}

}  // namespace
}  // namespace trib::sweep
