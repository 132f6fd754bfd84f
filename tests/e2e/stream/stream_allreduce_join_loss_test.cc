// An allreduce stream job that loses a member while a relaunched worker joins: worker 2 is lost
// and relaunched, and worker 1 is killed inside the rollback of the group that takes worker 2
// back (TRIB_TEST_FAULT=allreduce-stream-held-in-rollback:1:2 holds it there: its first rollback
// was the loss's; app/fault_hooks.h), then relaunched too. Every group goes on from its own step
// with the members' Kafka progress, none from a checkpoint, and every event is trained once.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "e2e/stream/allreduce_stream_util.h"
#include "e2e/trib_process.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib {
namespace {

using namespace stream_e2e;

// The step group `generation` (workers 0, 1, 2) goes on from on each of `printing` (the members
// that finish its rollback), with the same variables (crc32c) as the joiner `joiner` starts
// from; -1 (and a failure) if not.
std::int64_t group_of_three_step(const std::string& out, const std::string& generation, int joiner,
                                 const std::vector<int>& printing) {
  std::smatch m;
  if (!std::regex_search(out, m,
                         std::regex(fmt::format(R"(\[worker{}\] joined the allreduce group as generation {}: rank {} of 3; )"
                                                R"(starts at step (\d+) with rank \d+'s variables \(crc32c ([0-9a-f]{{8}})\))",
                                                joiner, generation, joiner)))) {
    ADD_FAILURE() << "worker " << joiner << " did not join generation " << generation << "\n" << out;
    return -1;
  }
  const std::int64_t step = std::stoll(m[1]);
  const std::string crc = m[2];
  std::printf("[ info ] %s\n", m[0].str().c_str());
  for (int w : printing) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    EXPECT_TRUE(std::regex_search(
        out, std::regex(fmt::format(R"(worker {}: allreduce group {} \(workers 0, 1, 2\) goes on from step {} with the )"
                                    R"(Kafka progress of that step of all [23] workers that took it, lost ones included, )"
                                    R"(variables crc32c {}; )",
                                    w, generation, step, crc))))
        << out;
  }
  return step;
}

// 3 workers, events live at 100 a second: kill -9 to worker 2 at its step 225; the survivors go
// on as (0, 1) from their step L; worker 2 is relaunched and joins at step J1 (generation G1);
// worker 1 is held inside that join's rollback and killed there; workers 0 and 2 give way at the
// rewind's rendezvous, their next exchange fails, and they go on as (0, 2) from J1 again (nothing
// was applied in G1); worker 1 is relaunched and joins at J2. Kept events: worker 0's all, worker
// 1's up to J1 and after J2, worker 2's up to L and after J1; each once, and the final
// checkpoint's offsets and the totals line hold exactly them. About 25 s.
TEST(StreamTraining, AnAllreduceJobThatLosesAWorkerDuringAJoinsRollbackTakesBothBackExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  std::atomic<bool> stop{false};
  stream::ProduceOptions produce = produce_options(broker.bootstrap());
  produce.rate = 100;
  std::thread producer([&] { stream::produce_events(produce, stop); });
  const fs::path out = testing::fresh_path("stream", "allreduce-join-loss");
  const int steps = 600, every = 100;
  const std::vector<std::string> args = job_args(broker.bootstrap(), out, "allreduce-join-loss", steps, every);
  KillAtStep kill2(out, 2, 2 * every + 25);
  pid_t worker1 = 0;
  bool lost1 = false;
  auto on_kill2 = kill2.on_line();
  testing::TribRun r = testing::run_trib(
      args, std::chrono::seconds(240),
      [&](const std::string& line, testing::Trib& t) {
        on_kill2(line, t);
        if (worker1 == 0) worker1 = started_pid(line, 1);  // the first process of worker 1
        if (!lost1 && worker1 != 0 && line.find("TRIB_TEST_FAULT: worker 1 is held") != std::string::npos)
          lost1 = ::kill(worker1, SIGKILL) == 0;
      },
      {{"TRIB_TEST_FAULT", "allreduce-stream-held-in-rollback:1:2"}});
  stop = true;
  producer.join();
  ASSERT_TRUE(kill2.killed()) << r.output;
  ASSERT_TRUE(lost1) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("restarting the job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker2 relaunched (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("local cluster: worker1 relaunched (pid"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolled back to checkpoint"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rolls back to the newest checkpoint"), std::string::npos) << r.output;

  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m,
                                std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1\) goes on from step (\d+) with )"
                                           R"(the Kafka progress of that step of all 3 workers)")))
      << r.output;
  const std::int64_t lost_at = std::stoll(m[1]);
  std::printf("[ info ] %s\n", m[0].str().c_str());
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\[worker2\] joined the allreduce group as generation (\d+))")))
      << r.output;
  const std::string first_join = m[1];
  const std::int64_t joined_at = group_of_three_step(r.output, first_join, 2, {0, 2});  // worker 1 is lost in it
  ASSERT_GE(joined_at, lost_at) << r.output;
  EXPECT_NE(r.output.find(fmt::format("worker 0: a member of allreduce group {} was lost during its rollback", first_join)),
            std::string::npos)
      << r.output;
  // Workers 0 and 2 go on from the join's step again (nothing was applied in its group), with the
  // same members' progress, unless worker 1's relaunch made that group with them.
  if (std::regex_search(r.output, m,
                        std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 2\) goes on from step (\d+) with )"
                                   R"(the Kafka progress of that step of all [23] workers)"))) {
    std::printf("[ info ] %s\n", m[0].str().c_str());
    EXPECT_EQ(std::stoll(m[1]), joined_at) << r.output;
  }
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\[worker1\] joined the allreduce group as generation (\d+))")))
      << r.output;
  const std::int64_t second_join = group_of_three_step(r.output, m[1], 1, {0, 1, 2});
  EXPECT_GE(second_join, joined_at) << r.output;
  // Each group went back at most the one step a member may have applied alone.
  const std::regex undone(R"(\((\d+) step\(s\) undone\))");
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), undone), end; it != end; ++it)
    EXPECT_LE(std::stoll((*it)[1]), 1) << (*it)[0];

  std::map<std::int64_t, int> seen;
  add_kept_ids(out, 0, steps, seen);
  add_kept_ids(out, 1, steps, seen, joined_at);  // its first process's lines up to the join it was lost in
  add_kept_ids(out, 2, steps, seen, lost_at);
  expect_kept_once(out, r.output, seen, steps + (joined_at + steps - second_join) + (lost_at + steps - joined_at), steps);
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
