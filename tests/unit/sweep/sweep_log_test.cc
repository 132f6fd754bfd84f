// sweep.jsonl as --resume reads it: trials, their last results, ASHA's rung records, and a
// line torn by a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sweep/sweep_log.h"
#include "sweep/trial.h"
#include "trib/core/error.h"

namespace trib::sweep {
namespace {

namespace fs = std::filesystem;

fs::path temp(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("trib_unit_sweep_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

TEST(SweepLog, ReplayRebuildsTrialsStatesAndRungs) {
  fs::path dir = temp("replay");
  {
    SweepLog log(dir / "sweep.jsonl");
    for (int i = 0; i < 3; ++i) {
      TrialRecord t;
      t.id = i;
      t.params = {{"optimizer.lr", 0.001 * (i + 1)}, {"training.batch", std::int64_t{32}}};
      log.trial(t);
    }
    TrialRecord t0{0, {}, TrialState::pending, 10, 0.5, ""};
    log.result(t0, "continue");
    TrialRecord t1{1, {}, TrialState::stopped, 10, 0.4, "at rung 10", 1.25};
    log.result(t1, "stop");
    log.end(t1);
    TrialRecord t2{2, {}, TrialState::failed, 0, std::nullopt, "exited with status 2"};
    log.end(t2);
  }
  std::ofstream(dir / "sweep.jsonl", std::ios::app) << R"({"event":"result","trial":0,"st)";  // torn by a crash
  Asha asha(10, 90, 3, true);
  std::vector<TrialRecord> trials = SweepLog::replay(dir / "sweep.jsonl", &asha);
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(describe(trials[2].params), "lr=0.003 batch=32");  // in the space's order
  EXPECT_EQ(trials[0].state, TrialState::pending);  // promoted, not ended: it continues
  EXPECT_EQ(trials[0].step, 10);
  EXPECT_EQ(trials[1].state, TrialState::stopped);
  EXPECT_EQ(trials[1].note, "at rung 10");
  EXPECT_DOUBLE_EQ(trials[1].cpu_s, 1.25);  // what its processes cost
  EXPECT_EQ(trials[2].state, TrialState::failed);
  // Both rung-10 results count for the next trial's cut-off: 0.4 + 2/3 * 0.1.
  ASSERT_TRUE(asha.cutoff(10).has_value());
  EXPECT_NEAR(*asha.cutoff(10), 0.466667, 1e-6);
  EXPECT_EQ(asha.next_stop(trials[0].step), 30);
  fs::remove_all(dir);
}

// A crash between a decision's line and the trial's end line: the decision stands. Before,
// a trial stopped at a rung came back pending and --resume trained it on to the next rung.
TEST(SweepLog, ADecisionWithoutItsEndLineEndsTheTrial) {
  fs::path dir = temp("decision");
  {
    SweepLog log(dir / "sweep.jsonl");
    for (int i = 0; i < 3; ++i) {
      TrialRecord t;
      t.id = i;
      log.trial(t);
    }
    log.result(TrialRecord{0, {}, TrialState::pending, 10, 0.6, ""}, "continue");
    log.result(TrialRecord{1, {}, TrialState::stopped, 10, 0.4, ""}, "stop");  // then the crash
    log.result(TrialRecord{0, {}, TrialState::completed, 90, 0.8, ""}, "done");  // likewise
    // Stopped by the time budget between rungs: never compared, no rung record.
    TrialRecord t2{2, {}, TrialState::stopped, 17, 0.3, "time budget", 0.5};
    log.result(t2, "stop");
    log.end(t2);
  }
  Asha asha(10, 90, 3, true);
  std::vector<TrialRecord> trials = SweepLog::replay(dir / "sweep.jsonl", &asha);
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(trials[0].state, TrialState::completed);
  EXPECT_EQ(trials[0].step, 90);
  EXPECT_EQ(trials[1].state, TrialState::stopped);  // not pending: it stays at rung 10
  EXPECT_EQ(trials[1].step, 10);
  EXPECT_TRUE(trials[1].finished());
  EXPECT_EQ(trials[2].state, TrialState::stopped);
  EXPECT_EQ(trials[2].note, "time budget");  // the end line's note wins
  // Rung 10 holds trials 0 and 1, once each: 0.4 + 2/3 * 0.2; step 17 is no rung.
  ASSERT_TRUE(asha.cutoff(10).has_value());
  EXPECT_NEAR(*asha.cutoff(10), 0.533333, 1e-6);
  EXPECT_FALSE(asha.cutoff(17).has_value());
  EXPECT_FALSE(asha.cutoff(90).has_value());  // the end is no rung
  fs::remove_all(dir);
}

// The promotion rule: a trial that waits at its rung waits again after --resume; one
// promoted from its wait continues; one that went on in its process counts as promoted, so
// that the rung does not promote it twice.
TEST(SweepLog, ReplayKnowsWhoWaitsAndWhoWasPromoted) {
  fs::path dir = temp("promotion");
  {
    SweepLog log(dir / "sweep.jsonl");
    for (int i = 0; i < 4; ++i) {
      TrialRecord t;
      t.id = i;
      log.trial(t);
    }
    log.result(TrialRecord{0, {}, TrialState::waiting, 10, 0.5, ""}, "wait");
    log.result(TrialRecord{1, {}, TrialState::waiting, 10, 0.7, ""}, "wait");
    log.result(TrialRecord{2, {}, TrialState::waiting, 10, 0.6, ""}, "wait");
    log.result(TrialRecord{1, {}, TrialState::pending, 10, 0.7, ""}, "promote");  // then the crash
    log.result(TrialRecord{3, {}, TrialState::running, 10, 0.9, ""}, "continue");
  }
  Asha asha(10, 90, 3, true);
  std::vector<TrialRecord> trials = SweepLog::replay(dir / "sweep.jsonl", &asha);
  ASSERT_EQ(trials.size(), 4u);
  EXPECT_EQ(trials[0].state, TrialState::waiting);
  EXPECT_EQ(trials[0].note, "at rung 10");
  EXPECT_FALSE(trials[0].finished());
  EXPECT_EQ(trials[2].state, TrialState::waiting);
  EXPECT_EQ(trials[1].state, TrialState::pending);  // promoted: continues from its checkpoint
  EXPECT_EQ(trials[1].step, 10);
  EXPECT_EQ(trials[3].state, TrialState::pending);
  EXPECT_TRUE(asha.promoted(1, 10));
  EXPECT_TRUE(asha.promoted(3, 10));
  EXPECT_FALSE(asha.promoted(0, 10));
  // Rung 10: 0.9, 0.7 (both promoted), 0.6, 0.5: n = 4, top 1: nothing more to promote.
  EXPECT_EQ(asha.next_promotion(), std::nullopt);
  fs::remove_all(dir);
}

TEST(SweepLog, ACorruptLineInTheMiddleIsAnError) {
  fs::path dir = temp("corrupt");
  std::ofstream(dir / "sweep.jsonl") << "{not json\n"
                                     << R"({"event":"trial","trial":0,"params":{},"order":[]})" << "\n";
  EXPECT_THROW(SweepLog::replay(dir / "sweep.jsonl", nullptr), Corruption);
  EXPECT_THROW(SweepLog::replay(dir / "missing.jsonl", nullptr), NotFound);
  fs::remove_all(dir);
}

TEST(TrialArguments, ResumeFromACheckpointElseStartAfresh) {
  fs::path dir = temp("args");
  TrialLaunch l;
  l.executable = "/bin/trib";
  l.job = "job.yaml";
  l.run_dir = dir / "trial-0000";
  l.params = {{"optimizer.lr", 0.01}};
  l.target = 30;
  l.extra = {"threads.intra=1"};
  fs::create_directories(l.run_dir / "checkpoints" / "ckpt-5");  // no manifest: never published
  std::vector<std::string> a = trial_arguments(l);
  EXPECT_EQ(a, (std::vector<std::string>{"/bin/trib", "train", "job.yaml", "--output", l.run_dir.string(), "--set",
                                         "optimizer.lr=0.01", "--set", "training.steps=30", "--set",
                                         "threads.intra=1"}));
  EXPECT_FALSE(fs::exists(l.run_dir));  // what the cut-short start left is gone
  fs::create_directories(l.run_dir / "checkpoints" / "ckpt-10");
  std::ofstream(l.run_dir / "checkpoints" / "ckpt-10" / "manifest.json") << "{}";
  a = trial_arguments(l);
  EXPECT_EQ(a[3], "--resume");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trib::sweep
