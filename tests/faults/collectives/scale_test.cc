// An allreduce job on files grows and shrinks while it runs (issue 12, "Elastic"): `trib scale
// RUN_DIR --workers N` starts a worker beyond the starting ones, which the group takes in at
// its next epoch boundary (it holds no shard of an epoch under way), and later asks it to
// leave, which it does at an epoch boundary too. Each time every member takes the same
// variables (crc32c), the learning rate follows the linear rule, and every member reshards
// from the same epoch, so no example of an epoch is left out or read twice.
#include "faults/collectives/allreduce_cluster.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using testing::find_line;
using testing::Trib;
using testing::TribRun;

// The epoch from which worker `w` read shard r of `count`, after `from` in `output`; -1 if none.
long reshard_epoch(const std::string& output, int w, int count, std::size_t from) {
  const std::vector<std::string> m = find_line(
      output.substr(from),
      std::regex(fmt::format(R"(^\[worker{}\] worker {}: from epoch ([0-9]+) on, data shard [0-9]+ of {} )", w, w,
                             count)));
  return m.empty() ? -1 : std::stol(m[1]);
}

TEST(AllreduceElastic, TribScaleTakesAWorkerInAndOutAtEpochBoundaries) {
  const fs::path out = testing::fresh_path("allreduce_faults", "scale");
  int phase = 0;
  std::unique_ptr<Trib> scale;
  auto start_scale = [&](int n) {
    scale = std::make_unique<Trib>("scale", std::vector<std::string>{"scale", out.string(), "--workers",
                                                                     std::to_string(n)});
  };
  // 24,000 examples of 128: 93 steps an epoch with 2 workers, 62 with 3; 12 epochs at 2.
  const std::vector<std::string> args = {
      "train", testing::kAllreduce, "--output", out.string(), "--set", "cluster.workers=2", "--set",
      "cluster.max_workers=3", "--set", "threads.intra=1", "--set", "training.train_metrics=false", "--set",
      "data.train_subset=24000", "--set", "data.test_subset=2000", "--set", "training.epochs=12"};
  TribRun r = testing::run_trib(args, std::chrono::seconds(300), [&](const std::string& line, Trib&) {
    if (scale && scale->exited()) {
      EXPECT_EQ(scale->exit_code(), 0) << scale->output();
      scale.reset();
    }
    if (scale) return;
    if (phase == 0 && line.starts_with("[worker0] run directory: ")) {
      start_scale(3);
      phase = 1;
    } else if (phase == 1 && line.starts_with("[worker2] step ")) {
      start_scale(2);  // worker 2, the highest, leaves
      phase = 2;
    }
  });
  ASSERT_EQ(phase, 2) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local cluster: scaling from 2 to 3 worker(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the group takes it in at its next epoch boundary"), std::string::npos) << r.output;

  // Taken in: the joiner starts with the members' variables, at a step where an epoch begins.
  const std::vector<std::string> joined = find_line(
      r.output, std::regex(R"(^\[worker2\] joined the allreduce group as generation ([0-9]+): rank 2 of 3; starts at )"
                           R"(step ([0-9]+) with rank [01]'s variables \(crc32c ([0-9a-f]{8})\).*learning rate x1\.5 )"));
  ASSERT_FALSE(joined.empty()) << r.output;
  const long join_step = std::stol(joined[2]);
  EXPECT_EQ(join_step % 93, 0) << "taken in at an epoch boundary (93 steps an epoch with 2 workers)\n" << r.output;
  // The joiner's data starts at that epoch, in its shard of 3.
  const long epoch = join_step / 93;
  EXPECT_FALSE(find_line(r.output, std::regex(fmt::format(R"(^\[worker2\] worker 2: data goes on at .*epoch={} .*\(shard 2 )"
                                                          R"(of 3\))",
                                                          epoch)))
                   .empty())
      << r.output;
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::vector<std::string> m = find_line(
        r.output, std::regex(fmt::format(R"(^\[worker{}\] step [0-9]+: .*the group went on as generation {} with 3 )"
                                         R"(workers \(was 2; this one rank {}\); back to step {} \(0 step\(s\) undone\), )"
                                         R"(variables crc32c ([0-9a-f]{{8}}), learning rate x1\.5 )",
                                         w, joined[1], w, join_step)));
    ASSERT_FALSE(m.empty()) << r.output;
    EXPECT_EQ(m[1], joined[3]) << "every member goes on from the same variables";
    EXPECT_EQ(reshard_epoch(r.output, w, 3, 0), epoch) << "every member reshards from the same epoch\n" << r.output;
  }

  // Asked to leave: worker 2 goes at an epoch boundary, the others reshard from that epoch.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("local cluster: asked worker2 \\(pid [0-9]+\\) to leave")))
      << r.output;
  const std::vector<std::string> left =
      find_line(r.output, std::regex(R"(^\[worker2\] step ([0-9]+): asked to leave \(trib scale\): worker 2 leaves)"));
  ASSERT_FALSE(left.empty()) << r.output;
  const long leave_step = std::stol(left[1]);
  EXPECT_EQ((leave_step - join_step) % 62, 0) << "it leaves at an epoch boundary (62 steps an epoch with 3)\n"
                                              << r.output;
  for (int w : {0, 1}) {
    SCOPED_TRACE(fmt::format("worker {}", w));
    const std::vector<std::string> m = find_line(
        r.output, std::regex(fmt::format(R"(^\[worker{}\] step {}: .*the group went on as generation [0-9]+ with 2 )"
                                         R"(workers \(was 3; this one rank {}\); back to step {} \(0 step\(s\) undone\).*)"
                                         R"(learning rate x1 )",
                                         w, leave_step, w, leave_step)));
    EXPECT_FALSE(m.empty()) << r.output;
    EXPECT_EQ(reshard_epoch(r.output, w, 2, r.output.find(left[0])), epoch + (leave_step - join_step) / 62)
        << r.output;
  }
  EXPECT_EQ(r.output.find("local cluster: worker2 (pid"), std::string::npos) << "it left, nothing was lost\n"
                                                                            << r.output;
  EXPECT_NE(r.output.find("every process finished"), std::string::npos) << r.output;
  EXPECT_GE(testing::final_accuracy(r.output), 0.78) << r.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib
