// Issue 12 for the allreduce chief: `kill -9` worker 0 of a local allreduce cluster of 3
// mid-run, after its first checkpoints. The two survivors re-form their group without it (the
// lowest survivor, worker 1, decides the plan), roll back to a step both stand at, and go on at
// the learning rate rescaled by the linear rule. The launcher relaunches the chief in place; it
// joins the running group as a relaunched worker does, starts with the members' variables
// (same checksum), takes the run directory back, and its checkpoints and evaluations go on to
// the end of the run. Only worker 0's process changes.
#include <fmt/format.h>

#include <fstream>

#include "e2e/trib_process.h"
#include "e2e/run_output.h"
#include "faults/collectives/allreduce_cluster.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::final_accuracy;
using testing::find_line;
using testing::TribRun;
using testing::test_rows;

TEST(AllreduceChiefRelaunch, AKilledChiefIsRelaunchedInPlaceJoinsWithTheGroupsVariablesAndTheRunGoesOn) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief");
  // 1000 steps (250 an epoch); a checkpoint and an evaluation every 50.
  std::vector<std::string> args = testing::job(out, 3);
  for (const char* s : {"training.checkpoint_every=50", "training.eval_every=50"}) {
    args.push_back("--set");
    args.push_back(s);
  }
  bool killed = false;
  std::string pid;
  int newest_at_kill = -1;
  // Killed at its evaluation row of step 100 (the chief prints those, not progress lines):
  // checkpoint 50 is written by then, 100 too if it got there before the kill landed.
  TribRun r = testing::run_signalling_worker(args, 0, std::regex(R"(^\[worker0\] +100 +)"),
                                             SIGKILL, killed, pid,
                                             [&] { newest_at_kill = testing::newest_checkpoint(out); });
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker0 (pid " + pid + ") was killed by signal 9 (Killed); relaunching (1 of 3)"),
            std::string::npos)
      << r.output;
  // Only the chief's process changes: nothing else is relaunched, and the job never restarts whole.
  EXPECT_EQ(r.output.find("relaunching (2 of 3)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not relaunched in place"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_GE(newest_at_kill, 50);

  // The survivors go on without it; worker 1, the lowest survivor, decides their group.
  EXPECT_FALSE(find_line(r.output, std::regex(R"(\[worker1\] .*worker 1: worker\(s\) 0 lost; allreduce group generation)"))
                   .empty())
      << r.output;
  for (int w : {1, 2}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::regex went_on(fmt::format(R"(\[worker{}\] step [0-9]+: .*the group went on as generation [0-9]+ with 2 )"
                                         R"(workers \(was 3; this one rank {}\); back to step [0-9]+ .*learning rate )"
                                         R"(x0\.6667 \(linear scaling\))",
                                         w, w - 1));
    EXPECT_FALSE(find_line(r.output, went_on).empty()) << r.output;
  }

  // The relaunched chief joins: at its first step its variables equal the members'.
  const std::vector<std::string> joined = find_line(
      r.output,
      std::regex(R"(\[worker0\] joined the allreduce group as generation ([0-9]+): rank 0 of 3; starts at step ([0-9]+) )"
                 R"(with rank [12]'s variables \(crc32c ([0-9a-f]{8})\) and optimizer state; learning rate x1 )"));
  ASSERT_FALSE(joined.empty()) << r.output;
  const std::string generation = joined[1], crc = joined[3];
  const int joined_at = std::stoi(joined[2]);
  EXPECT_GE(joined_at, 100);
  for (int w : {1, 2}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::regex same(fmt::format(R"(\[worker{}\] step [0-9]+: .*the group went on as generation {} with 3 )"
                                      R"(workers \(was 2; this one rank {}\); back to step {} .*variables crc32c ([0-9a-f]{{8}}), )"
                                      R"(learning rate x1 )",
                                      w, generation, w, joined[2]));
    const std::vector<std::string> m = find_line(r.output, same);
    ASSERT_FALSE(m.empty()) << r.output;
    EXPECT_EQ(m[1], crc) << "the relaunched chief starts with the members' variables";
  }
  EXPECT_FALSE(find_line(r.output, std::regex(fmt::format(R"(\[worker0\] worker 0: relaunched in place of the lost chief; )"
                                                          R"(takes the run back at step {} \(the group's state)",
                                                          joined_at)))
                   .empty())
      << r.output;

  // Its checkpoints and evaluations go on in the same run directory, to the last step.
  EXPECT_EQ(testing::newest_checkpoint(out), 1000) << r.output;
  const std::vector<int> rows = test_rows(out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back(), 1000);
  const int next = (joined_at / 50 + 1) * 50;
  EXPECT_NE(std::find(rows.begin(), rows.end(), next), rows.end()) << "the relaunched chief's first evaluation";
  EXPECT_NE(std::find(rows.begin(), rows.end(), 100), rows.end()) << "the lost chief's evaluations stay";
  EXPECT_GE(final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

// The chief lost in the run's last steps: the survivors take the remaining steps without it and
// then wait for the relaunched chief (held stopped here until they wait, so that this path is
// the one taken), which joins, takes the final state and writes the last checkpoint and report.
TEST(AllreduceChiefRelaunch, AChiefLostNearTheEndIsAwaitedAndWritesTheLastCheckpoint) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief_end");
  std::vector<std::string> args = testing::job(out, 3);
  for (const char* s : {"training.checkpoint_every=50", "training.eval_every=50"}) {
    args.push_back("--set");
    args.push_back(s);
  }
  std::string pid, relaunched;
  bool killed = false, held = false, waited = false;
  TribRun r = testing::run_trib(args, std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex(R"(started .*worker0 \(pid ([0-9]+)\))"))) pid = m[1];
    if (!killed && !pid.empty() && std::regex_search(line, std::regex(R"(^\[worker0\] +950 +)"))) {
      ::kill(std::stoi(pid), SIGKILL);
      killed = true;
    }
    // Held until the survivors wait (unless they already do).
    if (relaunched.empty() && std::regex_search(line, m, std::regex(R"(worker0 relaunched \(pid ([0-9]+)\))"))) {
      relaunched = m[1];
      if (!waited) {
        ::kill(std::stoi(relaunched), SIGSTOP);
        held = true;
      }
    }
    if (!waited && std::regex_search(line, std::regex("waiting up to [0-9]+ s for it to join"))) {
      waited = true;
      if (held) {
        ::kill(std::stoi(relaunched), SIGCONT);
        held = false;
      }
    }
  });
  if (held) ::kill(std::stoi(relaunched), SIGCONT);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_TRUE(waited) << "the survivors waited for the relaunched chief: " << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  testing::expect_chief_ends_with_the_final_state(r.output, out, 1000);
  EXPECT_GE(final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
