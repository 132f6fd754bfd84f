// `trib sweep` and `trib plot` as processes, with tiny trials (a few hundred Fashion-MNIST
// images, tens of steps): ASHA stopping trials at their rung, a failing trial, a crash and
// --resume, bad input.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e/sweep/tiny_job.h"
#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kData = testing::kFashionMnist;

struct Event {
  std::string event;
  int trial = -1;
  std::int64_t step = 0;
  std::string decision, state, note;
};

std::vector<Event> read_log(const fs::path& dir) {
  std::vector<Event> out;
  std::ifstream in(dir / "sweep.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    out.push_back({j.value("event", ""), j.value("trial", -1), j.value("step", std::int64_t{0}),
                   j.value("decision", ""), j.value("state", ""), j.value("note", "")});
  }
  return out;
}

std::int64_t last_eval_step(const fs::path& run_dir) {
  std::int64_t last = -1;
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) last = nlohmann::json::parse(line).value("step", std::int64_t{-1});
  return last;
}

class SweepCli : public ::testing::Test {
 protected:
  SweepCli() : dir_(::testing::UnitTest::GetInstance()->current_test_info()->name()) {
    dir_.file("job.yaml", testing::tiny_job_yaml(3));
  }
  std::string sweep_file(const std::string& body) { return dir_.file("sweep.yaml", "job: job.yaml\n" + body); }
  std::string out() const { return (dir_.path() / "out").string(); }
  testing::TempDir dir_;
};

TEST_F(SweepCli, AshaStopsTrialsAtTheirRungAndWritesTheBest) {
  std::string file = sweep_file(
      "search: asha\nsteps: 12\nslots: 2\nthreads: 1\nasha: {grace_period: 4, reduction_factor: 3}\n"
      "space:\n  optimizer.lr: [0.01, 0.003, 0.00003, 0.00001, 0.000003]\n");
  testing::TribRun r = testing::run_trib({"sweep", file, "--output", out()}, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<Event> log = read_log(out());
  std::map<int, Event> ends;
  for (const Event& e : log)
    if (e.event == "end") {
      ASSERT_TRUE(ends.emplace(e.trial, e).second) << "trial " << e.trial << " ended twice";
    }
  ASSERT_EQ(ends.size(), 5u) << r.output;
  int stopped = 0, completed = 0;
  for (const auto& [id, e] : ends) {
    const fs::path run = fs::path(out()) / "trials" / fmt::format("trial-{:04d}", id);
    if (e.state == "stopped") {
      ++stopped;
      EXPECT_EQ(e.step, 4) << "trial " << id << " stopped at " << e.step;  // the one rung: 4 (x 3 = 12, the end)
      EXPECT_EQ(last_eval_step(run), e.step) << "trial " << id << " ran past its rung";
    } else {
      ASSERT_EQ(e.state, "completed") << e.note;
      ++completed;
      EXPECT_EQ(e.step, 12);
      EXPECT_EQ(last_eval_step(run), 12);
    }
  }
  EXPECT_GE(stopped, 1) << r.output;  // the smallest rates trail at the first rung
  EXPECT_GE(completed, 1);
  EXPECT_NE(r.output.find("stopped at rung"), std::string::npos) << r.output;
  // The best trial's config, a job file `trib train` takes as it is.
  ASSERT_TRUE(fs::exists(fs::path(out()) / "best.yaml"));
  ASSERT_TRUE(fs::exists(fs::path(out()) / "best.json"));
  EXPECT_NE(r.output.find("best: trial-"), std::string::npos);

  testing::TribRun plot = testing::run_trib({"plot", out()}, 60s);
  EXPECT_EQ(plot.exit_code, 0) << plot.output;
  std::ifstream curves(fs::path(out()) / "curves.dat");
  std::stringstream ss;
  ss << curves.rdbuf();
  EXPECT_NE(ss.str().find("# trial-0004"), std::string::npos);
  EXPECT_NE(ss.str().find("\n12 "), std::string::npos);
}

TEST_F(SweepCli, AFailingTrialIsReportedAndTheSweepGoesOn) {
  std::string file = sweep_file(
      "search: grid\nsteps: 6\nslots: 2\nthreads: 1\n"
      "space:\n  data.train.images: [" + kData + "train-images-idx3-ubyte.gz, /nonexistent/images.gz]\n");
  testing::TribRun r = testing::run_trib({"sweep", file, "--output", out()}, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;  // one trial has a result
  std::map<int, Event> ends;
  for (const Event& e : read_log(out()))
    if (e.event == "end") ends[e.trial] = e;
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].state, "completed");
  EXPECT_EQ(ends[1].state, "failed");
  EXPECT_NE(ends[1].note.find("/nonexistent/images.gz"), std::string::npos) << ends[1].note;
  EXPECT_NE(r.output.find("trial-0001"), std::string::npos);
  EXPECT_NE(r.output.find("1 failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("logs/trial-0001.log"), std::string::npos) << r.output;
}

TEST_F(SweepCli, ResumesAfterACrash) {
  // Wide trials, about two seconds each, so that the kill lands while the second one runs (see
  // the SIGTERM test below).
  dir_.file("job.yaml", testing::tiny_job_yaml(3, 4096, 256));
  std::string file = sweep_file(
      "search: random\nseed: 3\nsteps: 30\nslots: 1\nthreads: 1\nbudget: {trials: 3}\n"
      "space:\n  optimizer.lr: {loguniform: [1.0e-4, 1.0e-2]}\n  model.layers.1.units: {int: [3072, 4096]}\n");
  // Killed outright once the first trial has ended and the second has a checkpoint: the
  // trial processes die with it (their parent-death signal).
  const fs::path second = fs::path(out()) / "trials" / "trial-0001" / "checkpoints";
  testing::TribRun crashed = testing::run_trib({"sweep", file, "--output", out()}, 120s, [&](const std::string&, testing::Trib& p) {
    if (testing::newest_checkpoint(second.parent_path()) >= 3) p.signal(SIGKILL);
  });
  ASSERT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.output;
  std::this_thread::sleep_for(300ms);  // the orphaned trial gets its SIGKILL
  testing::TribRun again = testing::run_trib({"sweep", file, "--output", out()}, 60s);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("--resume"), std::string::npos) << again.output;

  testing::TribRun r = testing::run_trib({"sweep", file, "--resume", out()}, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<int, int> created, ended;
  for (const Event& e : read_log(out())) {
    if (e.event == "trial") ++created[e.trial];
    if (e.event == "end") {
      ++ended[e.trial];
      EXPECT_EQ(e.state, "completed");
      EXPECT_EQ(e.step, 30);
    }
  }
  EXPECT_EQ(created, (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}}));
  EXPECT_EQ(ended, (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}}));
  // The interrupted trial went on from its checkpoint rather than from the start.
  std::ifstream log(fs::path(out()) / "logs" / "trial-0001.log");
  std::stringstream ss;
  ss << log.rdbuf();
  EXPECT_NE(ss.str().find("--resume"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("resumed from"), std::string::npos) << ss.str();
}

TEST_F(SweepCli, SigtermStopsTheTrialsWithACheckpointAndResumeFinishesThem) {
  // A tiny trial takes its 30 steps in tens of milliseconds, less than a busy machine may take
  // to run this test's next poll: the signal then found trial 0 ended. Trials of about two seconds
  // (a wider layer, a larger batch) leave the signal a window it cannot miss.
  dir_.file("job.yaml", testing::tiny_job_yaml(3, 4096, 256));
  std::string file = sweep_file(
      "search: random\nsteps: 30\nslots: 1\nthreads: 1\nbudget: {trials: 2}\n"
      "space:\n  optimizer.lr: {loguniform: [1.0e-4, 1.0e-2]}\n");
  const fs::path first = fs::path(out()) / "trials" / "trial-0000";
  bool sent = false;
  testing::TribRun r = testing::run_trib({"sweep", file, "--output", out()}, 120s, [&](const std::string&, testing::Trib& p) {
    if (!sent && testing::newest_checkpoint(first) >= 3) p.signal(SIGTERM), sent = true;
  });
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--resume " + out()), std::string::npos) << r.output;
  for (const Event& e : read_log(out())) EXPECT_NE(e.event, "end") << "trial " << e.trial << " ended: " << e.note;
  testing::TribRun resumed = testing::run_trib({"sweep", file, "--resume", out()}, 120s);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  std::map<int, std::string> ends;
  for (const Event& e : read_log(out()))
    if (e.event == "end") ends[e.trial] = e.state;
  EXPECT_EQ(ends, (std::map<int, std::string>{{0, "completed"}, {1, "completed"}}));
}

TEST_F(SweepCli, TheTimeBudgetStopsRunningTrialsWithACheckpointAndStartsNoMore) {
  std::string file = sweep_file(
      "search: random\nsteps: 1000000\nslots: 1\nthreads: 1\nbudget: {trials: 3, time_s: 5}\n"
      "space:\n  optimizer.lr: {loguniform: [1.0e-4, 1.0e-2]}\n");
  testing::TribRun r = testing::run_trib({"sweep", file, "--output", out()}, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<Event> log = read_log(out());
  int created = 0;
  for (const Event& e : log) created += e.event == "trial";
  EXPECT_EQ(created, 1);  // no trial starts once the time is spent
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().event, "end");
  EXPECT_EQ(log.back().state, "stopped");
  EXPECT_EQ(log.back().note, "time budget");
  EXPECT_LT(log.back().step, 1000000);
  // Stopped at a step boundary with a checkpoint there (on a busy machine the signal may come
  // before the first step: nothing to save then).
  if (log.back().step > 0) {
    EXPECT_EQ(testing::newest_checkpoint(fs::path(out()) / "trials" / "trial-0000"), log.back().step);
  }
}

TEST_F(SweepCli, UnknownSpaceKeysAreNamedWithSuggestions) {
  std::string file = sweep_file("search: grid\nspace:\n  optimizer.lrr: [0.1]\n");
  testing::TribRun r = testing::run_trib({"sweep", file, "--output", out()}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("space.optimizer.lrr"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean 'optimizer.lr'"), std::string::npos) << r.output;
  EXPECT_EQ(testing::line_count(r.output), 1u) << r.output;
  EXPECT_FALSE(fs::exists(out()));  // nothing started
}

}  // namespace
}  // namespace trib
