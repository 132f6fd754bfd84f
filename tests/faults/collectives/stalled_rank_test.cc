// A stalled allreduce worker (SIGSTOP): silent past cluster.peer_timeout_ms, it is evicted and
// the other two re-form their group and go on; thawed (SIGCONT) once they have, it is told it
// was evicted and rejoins as a new member (it starts itself again: same pid, no relaunch), joining
// the running group with its members' variables, and the job finishes with all three.
#include "faults/collectives/allreduce_cluster.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::final_accuracy;
using testing::find_line;

TEST(AllreduceStalledWorker, ASigstoppedWorkerIsEvictedAndTheOthersGoOn) {
  const fs::path out = testing::fresh_path("allreduce_faults", "stalled");
  std::vector<std::string> args = testing::job(out, 3);
  for (std::string s : {"cluster.heartbeat_ms=200", "cluster.peer_timeout_ms=1000"}) {
    args.push_back("--set");
    args.push_back(s);
  }
  bool stopped = false, continued = false;
  std::string pid;
  testing::TribRun r = testing::run_trib(args, std::chrono::seconds(240), [&](const std::string& line, testing::Trib&) {
    std::smatch m;
    if (pid.empty() && std::regex_search(line, m, std::regex("worker2 \\(pid ([0-9]+)\\)"))) pid = m[1];
    if (!stopped && !pid.empty() && line.starts_with("[worker2] step 1/")) {
      ::kill(std::stoi(pid), SIGSTOP);
      stopped = true;
    }
    if (stopped && !continued && line.starts_with("[worker0] step ") && line.find("the group went on") != std::string::npos) {
      ::kill(std::stoi(pid), SIGCONT);
      continued = true;
    }
  });
  ASSERT_TRUE(stopped && continued) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    EXPECT_FALSE(find_line(r.output, std::regex(fmt::format(
                                         R"(^\[worker{}\] step [0-9]+: .*rank 2 \(worker 2 at .*is unreachable: .*; the group )"
                                         R"(went on as generation [0-9]+ with 2 workers \(was 3; this one rank {}\))",
                                         w, w)))
                     .empty())
        << r.output;
  }
  EXPECT_TRUE(find_line(r.output, std::regex(R"(\[worker2\] .*worker 2 \(incarnation [0-9]+, last generation seen )"
                                             R"([0-9]+\) is no longer a member of the job: .*; it rejoins the job as a )"
                                             R"(new member \(1 of 3)"))
                   .size() > 0)
      << r.output;
  EXPECT_EQ(r.output.find("local cluster: worker2 (pid " + pid + ")"), std::string::npos)
      << "the thawed process never ended\n" << r.output;
  EXPECT_EQ(r.output.find("relaunching"), std::string::npos) << "nothing is relaunched: it starts itself again";
  // It joins the running group with the members' variables, checked by checksum.
  const std::vector<std::string> joined = find_line(
      r.output,
      std::regex(R"(\[worker2\] joined the allreduce group as generation ([0-9]+): rank 2 of 3; starts at step ([0-9]+) )"
                 R"(with rank [01]'s variables \(crc32c ([0-9a-f]{8})\))"));
  ASSERT_FALSE(joined.empty()) << r.output;
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::vector<std::string> m = find_line(
        r.output, std::regex(fmt::format(R"(\[worker{}\] step [0-9]+: .*the group went on as generation {} with 3 )"
                                         R"(workers \(was 2; this one rank {}\); back to step {} .*variables crc32c )"
                                         R"(([0-9a-f]{{8}}))",
                                         w, joined[1], w, joined[2])));
    ASSERT_FALSE(m.empty()) << r.output;
    EXPECT_EQ(m[1], joined[3]) << "the new member starts with the members' variables";
  }
  EXPECT_GE(final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
