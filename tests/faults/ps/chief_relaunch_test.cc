// A lost chief relaunched in place (issue 12): `kill -9` worker 0 of an asynchronous
// parameter-server local cluster mid-run. The launcher relaunches it; the new process takes
// the run directory back from its newest checkpoint, restores every server from it in a new
// generation, and every other worker rewinds to it (the server-restore path). The job
// finishes without a whole-job restart, its checkpoints and report go on in the same run
// directory, and its accuracy is within 1 point of a fault-free run.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"
#include "faults/ps/restore_job.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::TribRun;
using testing::test_rows;

using testing::final_accuracy;

TEST(PsChiefRelaunch, AKilledChiefIsRelaunchedInPlaceRestoresTheJobFromItsCheckpointAndTheRunGoesOn) {
  fs::path clean_out = testing::fresh_path("faults", "chief_relaunch_clean");
  TribRun clean = run_trib(testing::restore_job(clean_out), std::chrono::seconds(180));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const double fault_free = final_accuracy(clean.output);

  // The chief is killed at its report of step 60: checkpoint 40 is written by then (60 too,
  // if it got there before the kill landed).
  fs::path out = testing::fresh_path("faults", "chief_relaunch");
  std::string killed;  // its pid
  int newest_at_kill = -1;
  TribRun r = testing::run_killing(out, "worker0", std::regex("^\\[worker0\\] +60 +"), std::chrono::seconds(240), killed,
                                   [&] { newest_at_kill = testing::newest_checkpoint(out); });
  ASSERT_FALSE(killed.empty()) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("worker0 \\(pid " + killed + "\\) was killed by signal 9.*; relaunching \\(1 of 3\\)")))
      << r.output;
  EXPECT_EQ(r.output.find("not relaunched in place"), std::string::npos) << r.output;

  // The new chief takes the run back at the newest checkpoint and restores every server from it.
  std::smatch back;
  ASSERT_TRUE(std::regex_search(r.output, back,
                                std::regex("\\[worker0\\] worker 0: relaunched in place of the lost chief; takes the run "
                                           "back at step ([0-9]+) \\(\\S+ckpt-([0-9]+)\\)")))
      << r.output;
  const int step = std::stoi(back[1]);
  EXPECT_EQ(back[2], back[1]);
  EXPECT_GE(step, 40);
  EXPECT_GE(step, newest_at_kill);
  EXPECT_EQ(step % 20, 0);
  EXPECT_TRUE(std::regex_search(r.output, std::regex(fmt::format(
                                              "worker 0: parameter server restore: worker 0 \\(the chief\\) lost; every "
                                              "server reloaded checkpoint \\S+ckpt-{0} \\(step {0}\\) in generation",
                                              step))))
      << r.output;
  // Every other worker still training rewinds to it (one may have finished all its steps).
  int rewound = 0;
  for (int w = 1; w < 3; ++w)
    rewound += std::regex_search(
        r.output, std::regex(fmt::format("\\[worker{0}\\] worker {0}: parameter server restore \\(worker 0 \\(the chief\\) "
                                         "lost\\) from \\S+; back to step {1} from step [0-9]+",
                                         w, step)));
  EXPECT_GE(rewound, 1) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("parameter server restores: 1\n.*worker 0 \\(the chief\\) lost: "
                                                     "back to step " + std::to_string(step))))
      << r.output;

  // Checkpoints and the report continue in the same run directory, to the last step.
  EXPECT_EQ(testing::newest_checkpoint(out), 496) << r.output;
  const std::vector<int> rows = test_rows(out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back(), 496);
  EXPECT_NE(std::find(rows.begin(), rows.end(), step + 20), rows.end()) << "the new chief's first evaluation";
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), fault_free, 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

}  // namespace
}  // namespace trib
