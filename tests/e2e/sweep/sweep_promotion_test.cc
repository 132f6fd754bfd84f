// `trib sweep` with ASHA's promotion rule (asha.rule: promotion, the paper's Algorithm 2), as
// a process with tiny trials: trials wait at their rung, a free slot promotes the best of a
// rung's top third, the trials still waiting at the end are stopped there, and a sweep killed
// mid-way resumes knowing who waits and who was promoted.
//
// Whatever the order and the slots, a sweep under this rule ends only when no rung has an
// unpromoted trial in its top floor(n / 3): with 9 trials and rungs 3 and 9 (the end 27), the
// top 3 at rung 3 went on, and the top third of those at rung 9. A promotion is never taken
// back, so a trial promoted while its rung held few results may be more (as in the paper).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e/sweep/tiny_job.h"
#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::vector<nlohmann::json> read_log(const fs::path& dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(dir / "sweep.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

int count_decisions(const fs::path& dir, const std::string& decision) {
  int n = 0;
  for (const nlohmann::json& j : read_log(dir)) n += j.value("decision", "") == decision;
  return n;
}

std::int64_t last_eval_step(const fs::path& run_dir) {
  std::int64_t last = -1;
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) last = nlohmann::json::parse(line).value("step", std::int64_t{-1});
  return last;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// 9 grid points: lr 0.01 trains far faster in a few steps than the 8 tiny rates.
const char* kSweep =
    "search: asha\nseed: 1\nsteps: 27\nthreads: 1\nasha: {grace_period: 3, reduction_factor: 3, rule: promotion}\n"
    "space:\n  optimizer.lr: [0.01, 1.0e-7, 2.0e-7, 3.0e-7, 4.0e-7, 5.0e-7, 6.0e-7, 7.0e-7, 8.0e-7]\n";

// The invariants of a finished sweep under the promotion rule (above), from its log and its
// trials' run directories.
void expect_finished_promotion_sweep(const fs::path& out) {
  std::map<int, int> created;
  std::map<int, nlohmann::json> ends;
  std::map<std::int64_t, std::set<int>> promoted;         // rung -> trials gone on past it
  std::map<std::int64_t, std::map<int, double>> at_rung;  // rung -> trial -> metric
  for (const nlohmann::json& j : read_log(out)) {
    const std::string event = j.value("event", "");
    const int id = j.value("trial", -1);
    if (event == "trial") ++created[id];
    if (event == "end") {
      EXPECT_TRUE(ends.emplace(id, j).second) << "trial " << id << " ended twice";
    }
    const std::string decision = j.value("decision", "");
    const std::int64_t step = j.value("step", std::int64_t{0});
    if (decision == "wait" || decision == "continue") at_rung[step][id] = j.value("metric", 0.0);
    if (decision == "continue" || decision == "promote") {
      EXPECT_TRUE(promoted[step].insert(id).second) << "trial " << id << " promoted twice past " << step;
    }
    EXPECT_NE(decision, "stop") << "the promotion rule stops no trial on arrival";
  }
  EXPECT_EQ(created.size(), 9u);
  for (const auto& [id, n] : created) EXPECT_EQ(n, 1) << "trial " << id << " created " << n << " times";
  ASSERT_EQ(ends.size(), 9u);
  EXPECT_EQ(at_rung[3].size(), 9u);
  EXPECT_EQ(at_rung[9].size(), promoted[3].size());  // every trial promoted past 3 reached 9
  for (std::int64_t rung : {3, 9}) {
    // The top floor(n / 3) at the rung all went on: none left behind beats the k-th best.
    std::vector<double> values;
    for (const auto& [id, m] : at_rung[rung]) values.push_back(m);
    std::sort(values.rbegin(), values.rend());
    const std::size_t top = values.size() / 3;
    ASSERT_GE(top, 1u) << "rung " << rung;
    EXPECT_GE(promoted[rung].size(), top) << "rung " << rung;
    for (const auto& [id, m] : at_rung[rung])
      if (!promoted[rung].count(id)) {
        EXPECT_LE(m, values[top - 1]) << "trial " << id << " at rung " << rung;
      }
  }
  int completed = 0;
  for (const auto& [id, e] : ends) {
    const std::string state = e.value("state", "");
    const std::int64_t step = e.value("step", std::int64_t{0});
    const fs::path run = out / "trials" / fmt::format("trial-{:04d}", id);
    EXPECT_EQ(last_eval_step(run), step) << "trial " << id << " ran past its end";
    if (state == "completed") {
      ++completed;
      EXPECT_EQ(step, 27);
      continue;
    }
    // A trial no free slot promoted is stopped where it waited.
    EXPECT_EQ(state, "stopped") << e.dump();
    EXPECT_TRUE(step == 3 || step == 9) << e.dump();
    EXPECT_EQ(e.value("note", ""), fmt::format("at rung {}, not promoted", step));
    EXPECT_FALSE(promoted[step].count(id)) << e.dump();
  }
  EXPECT_EQ(completed, static_cast<int>(promoted[9].size()));
  // The best config is the best last result's.
  nlohmann::json best = nlohmann::json::parse(read_text(out / "best.json"));
  double best_value = 0;
  for (const auto& [id, e] : ends) best_value = std::max(best_value, e.value("metric", 0.0));
  EXPECT_DOUBLE_EQ(best.value("value", -1.0), best_value);
  EXPECT_TRUE(fs::exists(out / "best.yaml"));
}

class SweepPromotion : public ::testing::Test {
 protected:
  SweepPromotion() : dir_(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  fs::path out() const { return dir_.path() / "out"; }
  testing::TempDir dir_;
};

TEST_F(SweepPromotion, TrialsWaitAtTheirRungAndTheTopThirdIsPromoted) {
  dir_.file("job.yaml", testing::tiny_job_yaml(3));
  std::string file = dir_.file("sweep.yaml", std::string("job: job.yaml\nslots: 2\n") + kSweep);
  testing::TribRun r = testing::run_trib({"sweep", file, "--output", out().string()}, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_finished_promotion_sweep(out());
  EXPECT_NE(r.output.find("waits at rung 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped: at rung 3, not promoted"), std::string::npos) << r.output;  // the final table
  // A trial promoted after waiting went on from its rung's checkpoint.
  std::set<int> waited_then_promoted;
  for (const nlohmann::json& j : read_log(out()))
    if (j.value("decision", "") == "promote") waited_then_promoted.insert(j.value("trial", -1));
  ASSERT_FALSE(waited_then_promoted.empty()) << r.output;
  for (int id : waited_then_promoted) {
    const std::string log = read_text(out() / "logs" / fmt::format("trial-{:04d}.log", id));
    EXPECT_NE(log.find("resumed from"), std::string::npos) << log;
  }
}

TEST_F(SweepPromotion, AKilledSweepResumesWithItsWaitingAndPromotedTrials) {
  // Wider trials (tens of milliseconds a step) so that the kill lands mid-sweep.
  dir_.file("job.yaml", testing::tiny_job_yaml(3, 1024, 128));
  std::string file = dir_.file("sweep.yaml", std::string("job: job.yaml\nslots: 1\n") + kSweep);
  // Killed outright once two trials wait at rung 3: the trial processes die with it.
  testing::TribRun crashed =
      testing::run_trib({"sweep", file, "--output", out().string()}, 120s, [&](const std::string&, testing::Trib& p) {
        if (count_decisions(out(), "wait") >= 2) p.signal(SIGKILL);
      });
  ASSERT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.output;
  std::vector<nlohmann::json> before = read_log(out());
  std::this_thread::sleep_for(300ms);  // the orphaned trial gets its SIGKILL
  int ended_before = 0;
  for (const nlohmann::json& j : before) ended_before += j.value("event", "") == "end";
  EXPECT_EQ(ended_before, 0);  // nothing ends before the sweep does: the waiting ones wait

  testing::TribRun r = testing::run_trib({"sweep", file, "--resume", out().string()}, 180s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_finished_promotion_sweep(out());
  // The trials waiting at the kill were not run again from the start: their first segment's
  // result is logged once.
  std::map<int, int> rung3_results;
  for (const nlohmann::json& j : read_log(out()))
    if (j.value("step", 0) == 3 && (j.value("decision", "") == "wait" || j.value("decision", "") == "continue"))
      ++rung3_results[j.value("trial", -1)];
  for (const auto& [id, n] : rung3_results) EXPECT_EQ(n, 1) << "trial " << id << " reached rung 3 " << n << " times";
}

}  // namespace
}  // namespace trib
