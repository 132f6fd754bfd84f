// Issue 12, the allreduce chief at the run's end: the other workers do not leave before worker 0
// says that the run's end is written (its last checkpoint and report). A chief lost in that
// window (here killed by the test-only hook TRIB_TEST_FAULT=allreduce-chief-lost-at-final-checkpoint
// right after the last step's exchange, before its final evaluation, checkpoint and report) is
// relaunched in place; the survivors re-form without it, wait for it, and hand it the final
// state, and it writes the last checkpoint and the report. Only worker 0's process changes.
#include <fmt/format.h>

#include <map>
#include <sstream>

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

// One epoch (250 steps); the last checkpoint and evaluation at step 250 only.
std::vector<std::string> one_epoch(const fs::path& out) {
  std::vector<std::string> args = testing::job(out, 3);
  args.push_back("--set");
  args.push_back("training.epochs=1");
  return args;
}

// The position of the first line of `output` matching `pattern`, npos if none.
std::size_t line_at(const std::string& output, const std::regex& pattern) {
  std::size_t at = 0;
  while (at < output.size()) {
    std::size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    if (std::regex_search(output.substr(at, end - at), pattern)) return at;
    at = end + 1;
  }
  return std::string::npos;
}

TEST(AllreduceChiefEnd, AChiefLostAfterTheLastExchangeIsRelaunchedAndWritesTheLastCheckpointAndReport) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief_final");
  const std::map<std::string, std::string> fault{{"TRIB_TEST_FAULT", "allreduce-chief-lost-at-final-checkpoint"}};
  TribRun r = testing::run_trib(one_epoch(out), std::chrono::seconds(240), {}, fault);
  ASSERT_NE(r.output.find("TRIB_TEST_FAULT: worker 0 is lost after the run's last exchange (kill -9)"), std::string::npos)
      << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Relaunched once, in place: nothing else is relaunched, and the job never restarts whole.
  EXPECT_FALSE(find_line(r.output, std::regex(R"(local cluster: worker0 \(pid [0-9]+\) was killed by signal 9 \(Killed\); )"
                                              R"(relaunching \(1 of 3\))"))
                   .empty())
      << r.output;
  EXPECT_EQ(r.output.find("relaunching (2 of 3)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not relaunched in place"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;

  // The survivors saw the chief lost before its word, and waited for its relaunched process.
  for (int w : {1, 2}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    EXPECT_FALSE(find_line(r.output, std::regex(fmt::format(R"(\[worker{0}\] .*worker {0}: worker 0 \(the chief\) was lost )"
                                                            R"(after the run's last step, before confirming the run's end)",
                                                            w)))
                     .empty())
        << r.output;
  }
  EXPECT_FALSE(find_line(r.output, std::regex(R"(\[worker1\] .*waiting up to [0-9]+ s for it to join)")).empty()) << r.output;

  // The relaunched chief takes the final state (the members' checksum) at the last step, and
  // writes the last checkpoint, the last evaluation and the report, then says so.
  testing::expect_chief_ends_with_the_final_state(r.output, out, 250);
  EXPECT_GE(final_accuracy(r.output), 0.7) << r.output;
  EXPECT_FALSE(find_line(r.output, std::regex(R"(\[worker0\] .*worker 0: the run's end is written)")).empty()) << r.output;
  fs::remove_all(out);
}

// The chief lost twice at the run's end (TRIB_TEST_FAULT=allreduce-chief-lost-at-final-checkpoint:2:
// its first process and its first relaunched one each kill themselves right after the last
// exchange, the second one once it has taken the final state): relaunched twice, in place, and
// the last one writes the last checkpoint and the report; everybody exits 0.
TEST(AllreduceChiefEnd, AChiefLostTwiceAtTheRunsEndIsRelaunchedTwiceAndTheLastOneWritesTheRunsEnd) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief_final_twice");
  const std::map<std::string, std::string> fault{{"TRIB_TEST_FAULT", "allreduce-chief-lost-at-final-checkpoint:2"}};
  TribRun r = testing::run_trib(one_epoch(out), std::chrono::seconds(300), {}, fault);
  ASSERT_NE(r.output.find("TRIB_TEST_FAULT: worker 0 is lost after the run's last exchange (kill -9)"), std::string::npos)
      << r.output;
  ASSERT_NE(r.output.find("TRIB_TEST_FAULT: worker 0, relaunched 1 time(s), is lost after the run's last exchange "
                          "(kill -9)"),
            std::string::npos)
      << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int n : {1, 2}) {
    SCOPED_TRACE(fmt::format("relaunch {}", n));
    EXPECT_FALSE(find_line(r.output, std::regex(fmt::format(R"(local cluster: worker0 \(pid [0-9]+\) was killed by signal )"
                                                            R"(9 \(Killed\); relaunching \({} of 3\))",
                                                            n)))
                     .empty())
        << r.output;
  }
  EXPECT_EQ(r.output.find("relaunching (3 of 3)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not relaunched in place"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;

  // Each relaunched chief took the final state at the last step (the same variables both times),
  // and the last one wrote the run's end.
  testing::expect_chief_ends_with_the_final_state(r.output, out, 250);
  const std::regex joined(R"(\[worker0\] joined the allreduce group as generation [0-9]+: rank 0 of 3; starts at step 250 )"
                          R"(with rank [12]'s variables \(crc32c ([0-9a-f]{8})\))");
  std::vector<std::string> crcs;
  std::istringstream lines(r.output);  // line by line: std::regex on a whole transcript recurses too deep
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, m, joined)) crcs.push_back(m[1]);
  ASSERT_EQ(crcs.size(), 2u) << r.output;
  EXPECT_EQ(crcs[0], crcs[1]) << r.output;
  EXPECT_GE(final_accuracy(r.output), 0.7) << r.output;
  EXPECT_FALSE(find_line(r.output, std::regex(R"(\[worker0\] .*worker 0: the run's end is written)")).empty()) << r.output;
  fs::remove_all(out);
}

// The usual end: every other worker leaves right after the chief's word, which comes after its
// report; nobody waits out cluster.join_timeout_s, and nothing is re-formed.
TEST(AllreduceChiefEnd, WithoutAFaultTheOthersLeaveRightAfterTheChiefsWord) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief_end_usual");
  TribRun r = testing::run_trib(one_epoch(out), std::chrono::seconds(240));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t report = line_at(r.output, std::regex(R"(\[worker0\] .*done: test accuracy)"));
  const std::size_t word = line_at(r.output, std::regex(R"(\[worker0\] .*worker 0: the run's end is written)"));
  ASSERT_NE(report, std::string::npos) << r.output;
  ASSERT_NE(word, std::string::npos) << r.output;
  EXPECT_LT(report, word) << "the chief's word comes after its report";
  for (int w : {1, 2}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::size_t left =
        line_at(r.output, std::regex(fmt::format(R"(\[worker{0}\] .*worker {0}: worker 0 confirmed the run's end; leaving)", w)));
    ASSERT_NE(left, std::string::npos) << r.output;
    EXPECT_GT(left, word) << r.output;
  }
  EXPECT_EQ(r.output.find("did not confirm the run's end"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("waiting up to"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("relaunching"), std::string::npos) << r.output;
  EXPECT_EQ(testing::newest_checkpoint(out), 250) << r.output;
  fs::remove_all(out);
}

// Another worker lost while the chief writes the run's end (killed at the chief's final
// evaluation, while the others wait for its word) does not hold the chief up: it writes its last
// checkpoint and report, gives its word, and the job ends well.
TEST(AllreduceChiefEnd, AWorkerLostWhileTheChiefEndsTheRunDoesNotBlockIt) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief_end_worker_lost");
  bool killed = false;
  std::string pid;
  // The chief's evaluation table starts at its final evaluation (one epoch: the only one).
  TribRun r = testing::run_signalling_worker(one_epoch(out), 2, std::regex(R"(^\[worker0\] +step +epoch)"), SIGKILL,
                                             killed, pid);
  ASSERT_TRUE(killed) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(find_line(r.output, std::regex(R"(\[worker0\] .*worker 0: the run's end is written)")).empty()) << r.output;
  EXPECT_FALSE(find_line(r.output, std::regex(R"(\[worker1\] .*worker 1: worker 0 confirmed the run's end; leaving)")).empty())
      << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_EQ(testing::newest_checkpoint(out), 250) << r.output;
  EXPECT_GE(final_accuracy(r.output), 0.7) << r.output;
  fs::remove_all(out);
}

// The wait for the chief's word is bounded by cluster.join_timeout_s: a chief that is alive but
// slow past it (held 6 s after the last exchange by the test-only hook, its heartbeats going on)
// is left to end alone; the others say so and leave, and the chief still ends the run. (A
// SIGSTOP from the test at the chief's evaluation came too late under load: it takes ms.)
TEST(AllreduceChiefEnd, PastTheJoinTimeoutTheOthersLeaveAChiefThatIsAliveToEndAlone) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief_end_slow");
  std::vector<std::string> args = one_epoch(out);
  for (const char* s : {"cluster.join_timeout_s=3", "cluster.peer_timeout_ms=20000"}) {
    args.push_back("--set");
    args.push_back(s);
  }
  const std::map<std::string, std::string> fault{{"TRIB_TEST_FAULT", "allreduce-chief-slow-at-final-checkpoint:6"}};
  TribRun r = testing::run_trib(args, std::chrono::seconds(240), {}, fault);
  ASSERT_NE(r.output.find("TRIB_TEST_FAULT: worker 0 is held 6 s after the run's last exchange"), std::string::npos)
      << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int w : {1, 2}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    EXPECT_FALSE(find_line(r.output, std::regex(fmt::format(R"(\[worker{0}\] .*worker {0}: worker 0 \(the chief\) did not )"
                                                            R"(confirm the run's end within 3 s \(cluster\.join_timeout_s\); leaving)",
                                                            w)))
                     .empty())
        << r.output;
  }
  EXPECT_EQ(r.output.find("relaunching"), std::string::npos) << r.output;
  EXPECT_EQ(testing::newest_checkpoint(out), 250) << r.output;
  EXPECT_GE(final_accuracy(r.output), 0.7) << r.output;
  fs::remove_all(out);
}

TEST(AllreduceChiefEnd, AnUnknownFaultValueFailsNamingTheExpectedOne) {
  const fs::path out = testing::fresh_path("allreduce_faults", "chief_end_bad_fault");
  TribRun r = testing::run_trib(one_epoch(out), std::chrono::seconds(120), {},
                                {{"TRIB_TEST_FAULT", "allreduce-chief-lost-somewhere"}});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("TRIB_TEST_FAULT=allreduce-chief-lost-somewhere: expected ps-lost-at-final-gather:INDEX, "
                          "ps-copy-held:INDEX, allreduce-chief-lost-at-final-checkpoint[:PROCESSES], "
                          "allreduce-chief-slow-at-final-checkpoint:SECONDS, allreduce-stream-slow-in-rewind:SECONDS, "
                          "allreduce-stream-slow-after-rewind:SECONDS, "
                          "allreduce-stream-slow-after-last-step:SECONDS, allreduce-stream-end-chief-join-held:SECONDS, "
                          "allreduce-stream-held-before-broadcast:WORKER, allreduce-stream-join-after-checkpoint:STEP, "
                          "allreduce-stream-join-after-step:STEP, allreduce-stream-held-in-rollback:WORKER:N, "
                          "stream-worker-lost-at-step:WORKER:STEP, stream-worker-leaves-at-step:WORKER:STEP, "
                          "stream-worker-lost-after-rewind:WORKER, stream-worker-lost-before-hand-back:WORKER or "
                          "stream-worker-lost-between-pushes:WORKER:STEP"),
            std::string::npos)
      << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
