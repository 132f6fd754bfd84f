// The allreduce stream job of supervised_stream_test.cc (`trib coordinator` and a `trib worker
// --join ADDR --index W` per worker, on loopback, librdkafka's mock cluster hosted by the test)
// with cluster.stream_rejoin on, the default: worker 2, killed (kill -9) at its step 225 and
// started again by its supervisor with the same command, rejoins the running group, which rolls
// back to its newest checkpoint with it, as under `trib train`
// (stream_allreduce_rejoin_test.cc). Every event trained once.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "e2e/cluster/supervised_job.h"
#include "e2e/stream/allreduce_stream_util.h"
#include "e2e/trib_process.h"
#include "trib/stream/mock_broker.h"

namespace trib::testing {
namespace {

TEST(SupervisedStream, AWorkerStartedAgainRejoinsTheRunningGroupExactlyOnce) {
  stream::MockBroker broker({.brokers = 1, .topics = {{"transactions", 6}}});
  // Live, 100 events a second: the survivors still train when worker 2 is started again.
  std::atomic<bool> stop{false};
  stream::ProduceOptions produce = produce_options(broker.bootstrap());
  produce.rate = 100;
  std::thread producer([&] { stream::produce_events(produce, stop); });
  const int steps = 600, every = 100;
  std::vector<std::string> overrides = allreduce_stream_overrides(broker.bootstrap(), "supervised-rejoin", steps, every);
  overrides.push_back("cluster.ps=0");  // allreduce: no servers to wait for
  SupervisedJob job("supervised_stream_rejoin", [](const TempDir&) { return stream_e2e::kExample; }, overrides);
  ASSERT_TRUE(job.ready()) << job.coordinator->output();
  std::vector<std::unique_ptr<Trib>> workers;
  for (int w = 0; w < 3; ++w) workers.push_back(job.start("worker", w, "worker" + std::to_string(w)));
  std::vector<Trib*> all{job.coordinator.get(), workers[0].get(), workers[1].get(), workers[2].get()};

  ASSERT_TRUE(wait_until(all, [&] { return has_step(job.run / "stream_ids" / "worker-2.txt", 2 * every + 25); }, 180s))
      << transcript(all);
  workers[2]->signal(SIGKILL);
  ASSERT_TRUE(wait_exit(*workers[2], 10s, all)) << transcript(all);
  ASSERT_TRUE(wait_until(all, [&] { return job.coordinator->printed("the job goes on with 2 worker(s)"); }, 30s))
      << transcript(all);
  std::unique_ptr<Trib> again = job.start("worker", 2, "worker2 started again");
  all.push_back(again.get());
  const std::vector<Trib*> running{job.coordinator.get(), workers[0].get(), workers[1].get(), again.get()};
  ASSERT_TRUE(wait_until(all, [&] { return all_exited(running); }, 240s)) << transcript(all);
  stop = true;
  producer.join();
  const std::string out = transcript(all);
  for (Trib* p : running) EXPECT_EQ(p->exit_code(), 0) << p->name() << "\n" << out;
  EXPECT_TRUE(job.coordinator->printed("every worker finished")) << out;
  EXPECT_EQ(out.find("resumed from"), std::string::npos) << out;

  std::smatch m;
  const std::string joiner = again->output();
  ASSERT_TRUE(std::regex_search(joiner, m, std::regex(R"(joined the allreduce group as generation (\d+))"))) << out;
  const std::string generation = m[1];
  // The group of 3 rolled back to one checkpoint, every member with the same variables.
  std::string crc;
  std::int64_t rejoined_at = -1;
  for (Trib* p : {workers[0].get(), workers[1].get(), again.get()}) {
    SCOPED_TRACE(p->name());
    const std::string text = p->output();
    ASSERT_TRUE(std::regex_search(
        text, m,
        std::regex(fmt::format(R"(allreduce group {} \(workers 0, 1, 2\) rolled back to checkpoint (\d+) from step \d+ )"
                               R"(\(\d+ steps to redo\), variables crc32c ([0-9a-f]{{8}}); )",
                               generation))))
        << out;
    if (rejoined_at < 0) {
      rejoined_at = std::stoll(m[1]);
      crc = m[2];
      std::printf("[ info ] %s\n", m[0].str().c_str());
    }
    EXPECT_EQ(std::stoll(m[1]), rejoined_at) << out;
    EXPECT_EQ(m[2], crc) << p->name() << " goes on from the group's variables";
  }
  std::int64_t lost_at = rejoined_at;  // the survivors' own rollback, if they went on as 2 first
  if (std::regex_search(workers[0]->output(), m,
                        std::regex(R"(worker 0: allreduce group \d+ \(workers 0, 1\) rolled back to checkpoint (\d+))")))
    lost_at = std::stoll(m[1]);
  EXPECT_GE(lost_at, 2 * every) << out;
  EXPECT_GE(rejoined_at, lost_at) << out;

  std::map<std::int64_t, int> seen;
  add_kept_ids(job.run, 0, steps, seen);
  add_kept_ids(job.run, 1, steps, seen);
  add_kept_ids(job.run, 2, steps, seen, lost_at);  // the started-again process's record: a second "run" line
  stream_e2e::expect_kept_once(job.run, workers[0]->output(), seen,
                               3 * lost_at + 2 * (rejoined_at - lost_at) + 3 * (steps - rejoined_at), steps);
}

}  // namespace
}  // namespace trib::testing
