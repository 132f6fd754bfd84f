// RELIABILITY.md row 7, for real: a worker joins a running parameter-server job
// (`trib worker --join ADDR`, no --index) on loopback. It is admitted with the next free
// index below cluster.max_workers in a new generation, starts from the servers' current
// values (checked by checksum against what server 0 sent), reads its share of the data
// (data.assignment: dynamic) and trains; every batch of the job is applied once. A worker
// beyond cluster.max_workers is refused with one clear line.
#include <gtest/gtest.h>

#include <regex>

#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

// Two workers of up to three, 2,000 examples read 200 times over (long enough for a process to
// start while the others train) in chunks handed out by server 0.
std::string elastic_job() {
  std::string job = tiny_job("cluster: {ps: 1, workers: 2, max_workers: 3}\n");
  job = std::regex_replace(job, std::regex("training: \\{steps: 40,"), "training: {epochs: 200, eval_every: 1000000,");
  return std::regex_replace(job, std::regex("  train_subset: 2000\n"), "  train_subset: 2000\n  assignment: dynamic\n");
}

TEST(PsJoin, AWorkerJoiningMidRunStartsFromTheServersValuesAndTrainsItsShare) {
  TempDir dir("join");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", elastic_job());
  Trib coordinator("coordinator", {"coordinator", job, "--listen", "127.0.0.1:0", "--secret-file", secret, "--output",
                                   (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  const std::string address = coordinator.find("listening at (127\\.0\\.0\\.1:[0-9]+)");
  ASSERT_FALSE(address.empty()) << coordinator.output();
  Trib ps("ps", {"ps", "--join", address, "--secret-file", secret});
  Trib w0("worker0", {"worker", "--join", address, "--secret-file", secret, "--index", "0"});
  Trib w1("worker1", {"worker", "--join", address, "--secret-file", secret, "--index", "1"});
  std::vector<Trib*> all{&coordinator, &ps, &w0, &w1};
  // Mid-run: the chief has connected to the server and is training.
  ASSERT_TRUE(wait_until(all, [&] { return w0.printed("placement") && ps.printed("serving at"); }, 60s))
      << transcript(all);
  Trib joiner("joiner", {"worker", "--join", address, "--secret-file", secret});
  all.push_back(&joiner);
  ASSERT_TRUE(wait_exit(joiner, 180s, all)) << transcript(all);
  ASSERT_TRUE(wait_exit(w0, 60s, all)) << transcript(all);
  ASSERT_TRUE(wait_exit(coordinator, 30s, all)) << transcript(all);
  EXPECT_EQ(joiner.exit_code(), 0) << transcript(all);
  EXPECT_EQ(w0.exit_code(), 0) << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);

  // Its parameters at its first step are the servers' (crc32c on both sides).
  std::smatch worker, server;
  ASSERT_TRUE(std::regex_search(joiner.output(), worker,
                                std::regex("worker 2: starts at step ([0-9]+) with the servers' values \\(ps 0 crc32c "
                                           "([0-9a-f]{8})\\)")))
      << joiner.output();
  ASSERT_TRUE(std::regex_search(ps.output(), server,
                                std::regex("ps 0: worker 2 joined at step ([0-9]+); values crc32c ([0-9a-f]{8})")))
      << ps.output();
  EXPECT_EQ(worker[1], server[1]);
  EXPECT_EQ(worker[2], server[2]) << "the joiner starts from the values the server sent";
  EXPECT_NE(ps.output().find("ps 0: worker 2 joined at step"), std::string::npos);
  // It trained: a throughput of its own, and the servers count it.
  const std::string rate = joiner.find("worker 2 throughput: ([0-9]+) images/s");
  ASSERT_FALSE(rate.empty()) << joiner.output();
  EXPECT_GT(std::stoi(rate), 0) << "the joiner took steps\n" << joiner.output();
  EXPECT_NE(w0.output().find(", 1 joined"), std::string::npos) << w0.output();
  // 200 epochs of 62 batches: every one applied once, whoever read it.
  EXPECT_NE(w0.output().find("data: 12400 of 12400 batches applied"), std::string::npos) << w0.output();
  EXPECT_NE(w0.output().find("12400 updates"), std::string::npos) << "one update per batch\n" << w0.output();
}

TEST(PsJoin, AWorkerBeyondMaxWorkersIsRefusedWithOneLine) {
  TempDir dir("join_refused");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", elastic_job());
  Trib coordinator("coordinator", {"coordinator", job, "--listen", "127.0.0.1:0", "--secret-file", secret, "--output",
                                   (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  const std::string address = coordinator.find("listening at (127\\.0\\.0\\.1:[0-9]+)");
  // Indices 0, 1 and 2 held (no server yet: they wait for it), then a fourth.
  std::vector<std::unique_ptr<Trib>> held;
  for (int i = 0; i < 3; ++i)
    held.push_back(std::make_unique<Trib>("worker" + std::to_string(i),
                                          std::vector<std::string>{"worker", "--join", address, "--secret-file", secret,
                                                                   "--index", std::to_string(i)}));
  std::vector<Trib*> all{&coordinator};
  for (auto& h : held) all.push_back(h.get());
  wait_until(all, [] { return false; }, 3s);  // they join
  Trib extra("extra", {"worker", "--join", address, "--secret-file", secret, "--timeout", "10"});
  all.push_back(&extra);
  ASSERT_TRUE(wait_exit(extra, 30s, all)) << transcript(all);
  EXPECT_NE(extra.exit_code(), 0);
  EXPECT_TRUE(extra.printed("the job already has its 3 worker role(s) (cluster.max_workers)")) << extra.output();
  EXPECT_EQ(line_count(extra.output()), 1u) << extra.output();
}

}  // namespace
}  // namespace trib::testing
