// The collectives with real processes on loopback TCP: results against a naive sum, and a
// rank killed (kill -9) or stopped (SIGSTOP) mid-collective, which every other rank must
// report by name within the transport's peer timeout. Every test has a hard deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "integration/collectives/process_ranks.h"
#include "trib/collectives/collectives.h"

namespace trib::collectives {
namespace {

using ::testing::HasSubstr;
using testing::ProcessRanks;
using Clock = std::chrono::steady_clock;

// Rank r's element i; sums stay exact in f32.
float value(int rank, std::int64_t i) { return static_cast<float>((i * 3 + rank * 5) % 17) - 8.0f; }

int check_allreduce(Group& group, const std::function<void(const std::string&)>& say) {
  const int n = group.size();
  for (std::int64_t size : {0, 1, 7, 1009, 65537, 1 << 20}) {
    for (auto algorithm : {AllreduceAlgorithm::automatic, AllreduceAlgorithm::ring}) {
      Tensor t = Tensor::empty(DType::f32, Shape{size});
      for (std::int64_t i = 0; i < size; ++i) t.data<float>()[i] = value(group.rank(), i);
      allreduce(group, t, {.algorithm = algorithm});
      for (std::int64_t i = 0; i < size; ++i) {
        float expect = 0;
        for (int r = 0; r < n; ++r) expect += value(r, i);
        if (t.data<float>()[i] != expect) {
          say(fmt::format("size {} element {}: {} != {}", size, i, t.data<float>()[i], expect));
          return 1;
        }
      }
    }
    Tensor big = Tensor::empty(DType::i64, Shape{size});
    for (std::int64_t i = 0; i < size; ++i) big.data<std::int64_t>()[i] = (std::int64_t{1} << 40) * group.rank() + i;
    allreduce(group, big);
    for (std::int64_t i = 0; i < size; ++i) {
      if (big.data<std::int64_t>()[i] != (std::int64_t{1} << 40) * n * (n - 1) / 2 + i * n) {
        say(fmt::format("i64 size {} element {} wrong", size, i));
        return 1;
      }
    }
  }
  Tensor b = Tensor::full(Shape{100000}, static_cast<float>(group.rank()));
  broadcast(group, b, {.root = n - 1});
  if (b.data<float>()[99999] != static_cast<float>(n - 1)) return 3;
  Tensor all = allgather(group, Tensor::full(Shape{group.rank() + 1, 3}, static_cast<float>(group.rank())),
                         {.same_shape = false});
  if (all.shape()[0] != n * (n + 1) / 2 || all.data<float>()[all.numel() - 1] != static_cast<float>(n - 1)) return 4;
  barrier(group);
  return 0;
}

TEST(TcpProcesses, CollectivesMatchANaiveSumOnTwoAndFourProcesses) {
  for (int n : {2, 4}) {
    ProcessRanks ranks(n, check_allreduce, {}, GroupOptions{.segment_bytes = 64 << 10});
    ASSERT_TRUE(ranks.wait(std::chrono::seconds(60))) << "hung";
    for (int r = 0; r < n; ++r) EXPECT_TRUE(ranks[r].exited_ok()) << "rank " << r << ": " << ranks[r].output;
  }
}

net::NetOptions short_timeouts() {
  net::NetOptions o;
  o.heartbeat_interval = std::chrono::milliseconds(200);
  o.peer_timeout = std::chrono::milliseconds(1000);
  return o;
}

// Every rank but `victim` loops on allreduce until it fails, then reports the error.
int allreduce_until_failure(Group& group, const std::function<void(const std::string&)>& say) {
  Tensor t = Tensor::full(Shape{1 << 20}, 1.0f);
  say("started");
  try {
    for (;;) allreduce(group, t);
  } catch (const Unavailable& e) {
    say(std::string("failed: ") + e.what());
    return 0;
  } catch (const std::exception& e) {
    say(std::string("wrong error: ") + e.what());
    return 1;
  }
}

void expect_everyone_names(ProcessRanks& ranks, int victim, Clock::time_point since, double within_s) {
  for (int r = 0; r < ranks.size(); ++r) {
    if (r == victim) continue;
    std::string line = ranks.wait_for_line(r, "failed");
    const double took = std::chrono::duration<double>(Clock::now() - since).count();
    EXPECT_LT(took, within_s) << "rank " << r << " took " << took << " s: " << line;
    EXPECT_THAT(line, HasSubstr(fmt::format("allreduce: rank {} (worker {} at 127.0.0.1:", victim, victim)))
        << "rank " << r << ": " << ranks[r].output;
    EXPECT_THAT(line, HasSubstr("is unreachable")) << "rank " << r;
    if (std::getenv("TRIB_SHOW_ERRORS")) std::fprintf(stderr, "rank %d after %.3f s: %s\n", r, took, line.c_str());
  }
}

TEST(TcpProcesses, ARankKilledMidAllreduceIsNamedByEveryOtherRank) {
  ProcessRanks ranks(4, allreduce_until_failure, short_timeouts());
  for (int r = 0; r < 4; ++r) ASSERT_EQ(ranks.wait_for_line(r, "started"), "started") << ranks[r].output;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // well into the loop
  const auto killed = Clock::now();
  ranks.signal(2, SIGKILL);
  expect_everyone_names(ranks, 2, killed, 2.0);  // the socket closes at once: well within the timeout
  ASSERT_TRUE(ranks.wait(std::chrono::seconds(10)));
  for (int r : {0, 1, 3}) EXPECT_TRUE(ranks[r].exited_ok()) << ranks[r].output;
}

TEST(TcpProcesses, AStoppedRankIsNamedWithinTheHeartbeatTimeout) {
  ProcessRanks ranks(3, allreduce_until_failure, short_timeouts());
  for (int r = 0; r < 3; ++r) ASSERT_EQ(ranks.wait_for_line(r, "started"), "started") << ranks[r].output;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto stopped = Clock::now();
  ranks.signal(1, SIGSTOP);
  // Silence for the peer timeout (1 s) closes its connections: "within 2 heartbeat periods"
  // of the timeout, with margin for this machine's load.
  expect_everyone_names(ranks, 1, stopped, 3.5);
  ranks.signal(1, SIGKILL);
  ASSERT_TRUE(ranks.wait(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace trib::collectives
