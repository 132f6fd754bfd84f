// RELIABILITY.md row 3 with real processes: `kill -9` one of the two parameter servers of an
// asynchronous local cluster mid-run. The launcher relaunches it; the chief restores every
// server from its newest checkpoint and every worker rewinds to it; the job finishes, its
// report names the restore and the steps redone, and its accuracy is within 1 point of a
// fault-free run.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include <fmt/format.h>

#include "e2e/trib_process.h"
#include "faults/ps/restore_job.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::run_trib;
using testing::TribRun;

using testing::final_accuracy;

TEST(PsServerRestore, AKilledServerIsRelaunchedTheJobRollsBackToItsNewestCheckpointAndFinishes) {
  fs::path clean_out = testing::fresh_path("faults", "ps_restore_clean");
  TribRun clean = run_trib(testing::restore_job(clean_out), std::chrono::seconds(180));
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const double fault_free = final_accuracy(clean.output);

  // Server 1 is killed once the chief reports step 40: checkpoint 20 is written by then (40
  // too, or a later one, if the chief gets there before the kill lands). Async workers run
  // at their own pace: one may already have taken all its steps (it then redoes none).
  fs::path out = testing::fresh_path("faults", "ps_restore");
  std::string killed;  // its pid
  TribRun r = testing::run_killing(out, "ps1", std::regex("^\\[worker0\\] +40 +"), std::chrono::seconds(180), killed);
  ASSERT_FALSE(killed.empty()) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("ps1 \\(pid [0-9]+\\) was killed by signal 9.*; relaunching \\(1 of 3\\)")))
      << r.output;
  // One line says the chief restored every server, from which checkpoint.
  std::smatch restore;
  ASSERT_TRUE(std::regex_search(r.output, restore,
                                std::regex("worker 0: parameter server restore: ps 1 lost; every server reloaded checkpoint "
                                           "\\S+ckpt-([0-9]+) \\(step ([0-9]+)\\) in generation [0-9]+")))
      << r.output;
  const int step = std::stoi(restore[2]);
  EXPECT_GE(step, 20) << "the newest checkpoint at the kill";
  EXPECT_EQ(step % 20, 0);
  // Every worker still training rewinds to it, its step and its data: the chief, and at least
  // one other (the chief is the slowest, as it evaluates and checkpoints).
  int rewound = 0;
  for (int w = 0; w < 3; ++w)
    rewound += std::regex_search(
        r.output, std::regex(fmt::format("\\[worker{0}\\] worker {0}: parameter server restore \\(ps 1 lost\\) from \\S+; "
                                         "back to step {1} from step [0-9]+ \\([0-9]+ steps to redo\\), data at ",
                                         w, step)));
  EXPECT_GE(rewound, 2) << r.output;
  // The end report names the restore and the steps redone.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("parameter server restores: 1\n.*ps 1 lost: back to step " +
                                                     std::to_string(step) + " \\(\\S+\\); steps redone: worker 0: [0-9]+")))
      << r.output;
  std::smatch total;
  ASSERT_TRUE(std::regex_search(r.output, total, std::regex("steps redone in all: ([0-9]+)"))) << r.output;
  EXPECT_GT(std::stoi(total[1]), 0);
  EXPECT_NE(r.output.find("1 rollback(s)"), std::string::npos) << "server 0 was rolled back\n" << r.output;
  EXPECT_TRUE(testing::loses_at_most(final_accuracy(r.output), fault_free, 0.01)) << r.output;
  fs::remove_all(out);
  fs::remove_all(clean_out);
}

}  // namespace
}  // namespace trib
