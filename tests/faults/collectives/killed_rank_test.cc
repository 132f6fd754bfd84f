// RELIABILITY.md row 2 for allreduce with real processes: `kill -9` worker 2 of a local
// allreduce cluster of 3 mid-run. The launcher evicts it, the two survivors re-form their
// group in a new generation, roll back to the step both can stand at, and finish the run at
// the learning rate rescaled by the linear rule, with a sensible accuracy. No process
// restarts (cluster.max_restarts=0). With restarts (the default), the launcher relaunches it
// and it joins the running group: at its first step its variables equal the others'.
#include <fmt/format.h>
#include "faults/collectives/allreduce_cluster.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::final_accuracy;
using testing::find_line;
using testing::job;
using testing::TribRun;

TribRun run_killing_worker2(const std::vector<std::string>& args, bool& killed, std::string& pid) {
  return testing::run_signalling_worker2(args, SIGKILL, killed, pid);
}

TEST(AllreduceKilledWorker, TheSurvivorsReformTheGroupAndFinish) {
  const fs::path out = testing::fresh_path("allreduce_faults", "killed");
  bool killed = false;
  std::string pid;
  TribRun r = run_killing_worker2(job(out, 0), killed, pid);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2 (pid " + pid + ") was killed by signal 9"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("it was evicted, and the job goes on without it"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("relaunching"), std::string::npos) << "no process restarts";
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::string prefix = fmt::format(R"(\[worker{}\])", w);
    const std::regex went_on(prefix + R"(.*the group went on as generation ([0-9]+) with 2 workers \(was 3; this one rank )" +
                             std::to_string(w) + R"(\); back to step ([0-9]+) .*learning rate x0\.6667 \(linear scaling\))");
    EXPECT_FALSE(find_line(r.output, went_on).empty()) << r.output;
    EXPECT_FALSE(find_line(r.output, std::regex(prefix + R"(.*from epoch [0-9]+ on, data shard )" +
                                                std::to_string(w) + " of 2"))
                     .empty())
        << "the survivors reshard from the next epoch: " << r.output;
  }
  EXPECT_GE(final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

// Part two: the launcher relaunches worker 2 (cluster.max_restarts), it joins the running
// group in a new generation, takes the variables and optimizer state from a member, and the
// group is back to 3 workers at the original learning rate. Every member logs a checksum of
// its variables as the generation starts: the joiner's equals the others'.
TEST(AllreduceKilledWorker, ARelaunchedWorkerRejoinsWithTheGroupsVariables) {
  const fs::path out = testing::fresh_path("allreduce_faults", "rejoin");
  bool killed = false;
  std::string pid;
  TribRun r = run_killing_worker2(job(out, 3), killed, pid);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2 (pid " + pid + ") was killed by signal 9 (Killed); relaunching (1 of 3)"),
            std::string::npos)
      << r.output;
  const std::vector<std::string> joined = find_line(
      r.output,
      std::regex(R"(\[worker2\] joined the allreduce group as generation ([0-9]+): rank 2 of 3; starts at step ([0-9]+) )"
                 R"(with rank [01]'s variables \(crc32c ([0-9a-f]{8})\) and optimizer state; learning rate x1 )"));
  ASSERT_FALSE(joined.empty()) << r.output;
  const std::string generation = joined[1], crc = joined[3];
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::regex same(fmt::format(R"(\[worker{}\] step [0-9]+: .*the group went on as generation {} with 3 )"
                                      R"(workers \(was 2; this one rank {}\); back to step {} .*variables crc32c ([0-9a-f]{{8}}), )"
                                      R"(learning rate x1 )",
                                      w, generation, w, joined[2]));
    const std::vector<std::string> m = find_line(r.output, same);
    ASSERT_FALSE(m.empty()) << r.output;
    EXPECT_EQ(m[1], crc) << "the joiner starts with the members' variables";
  }
  EXPECT_GE(final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
