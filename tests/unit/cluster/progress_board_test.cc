// The launcher's board: children's lines printed above one live line that sums the workers'
// progress; in a log, plain prefixed lines; once stopping, only the failed process heard.
#include "cluster/progress_board.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace trib::cluster {
namespace {

class Captured {
 public:
  Captured() : f_(std::tmpfile()) {}
  ~Captured() { std::fclose(f_); }
  std::FILE* file() { return f_; }
  std::string text() {
    std::fflush(f_);
    std::rewind(f_);
    std::string out(1 << 16, '\0');
    out.resize(std::fread(out.data(), 1, out.size(), f_));
    return out;
  }

 private:
  std::FILE* f_;
};

std::string sample(std::int64_t step, std::int64_t total, double rate, double loss, double eta) {
  return format_progress_line({step, total, step / 100.0, rate, loss, eta});
}

TEST(ProgressSample, RoundTrips) {
  auto s = parse_progress_line(sample(120, 3000, 5321.5, 0.5123, 45));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 120);
  EXPECT_EQ(s->total, 3000);
  EXPECT_DOUBLE_EQ(s->images_per_s, 5321.5);
  EXPECT_DOUBLE_EQ(s->loss, 0.5123);
  EXPECT_DOUBLE_EQ(s->eta_s, 45);
  EXPECT_FALSE(parse_progress_line("step 5/10 loss 0.3").has_value());
  EXPECT_FALSE(parse_progress_line("@trib-progress step=x").has_value());
  EXPECT_FALSE(parse_progress_line("@trib-progress total=3").has_value());  // no step
  EXPECT_TRUE(parse_progress_line("@trib-progress step=3 future_key=1").has_value());
}

TEST(ProgressBoard, OneLiveLineOverAllWorkers) {
  Captured out;
  ProgressBoard board(out.file(), /*live=*/true);
  board.child_line("worker0", sample(120, 3000, 5000, 0.50, 40));
  board.child_line("worker1", sample(110, 3000, 4000, 0.30, 45));
  // The slowest worker's step and the longest ETA; throughput summed; loss averaged.
  EXPECT_EQ(board.live_line(),
            "[........................] step 110/3000  epoch 1.10  9000 img/s  loss 0.4000  ETA 0:45  (2 workers)");
  board.child_line("worker0", "step 200: something to say");
  board.child_line("worker0", sample(1600, 3000, 5000, 0.50, 18));
  board.child_line("worker1", sample(1500, 3000, 4000, 0.30, 20));
  EXPECT_NE(board.live_line().find("step 1500/3000"), std::string::npos) << board.live_line();
  EXPECT_NE(board.live_line().find("[############............]"), std::string::npos) << board.live_line();
  board.finish();
  const std::string text = out.text();
  // Other lines are printed above the live line: it is cleared, the line printed, and redrawn.
  EXPECT_NE(text.find("\r\033[K[worker0] step 200: something to say\n\r\033[K[...."), std::string::npos) << text;
  // No progress line reaches the screen as text, and the screen ends with the line cleared.
  EXPECT_EQ(text.find("@trib-progress"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\r\033[K")) << text;
}

TEST(ProgressBoard, AStreamHasNoTotalNorEta) {
  Captured out;
  ProgressBoard board(out.file(), true);
  board.child_line("worker0", sample(7, 0, 100, 0.25, -1));
  EXPECT_EQ(board.live_line(), "step 7  100 examples/s  loss 0.2500  (1 worker)");
}

TEST(ProgressBoard, InALogLinesArePlainAndPrefixed) {
  Captured out;
  ProgressBoard board(out.file(), /*live=*/false);
  board.child_line("worker0", "step 10/20 epoch 0.50 images_per_s 100 loss 0.3 eta 0:05");
  board.print("local cluster: every process finished");
  EXPECT_EQ(out.text(),
            "[worker0] step 10/20 epoch 0.50 images_per_s 100 loss 0.3 eta 0:05\n"
            "local cluster: every process finished\n");
  EXPECT_EQ(board.live_line(), "");
}

TEST(ProgressBoard, StoppingHearsOnlyTheFailedProcess) {
  Captured out;
  ProgressBoard board(out.file(), true);
  board.child_line("worker0", sample(5, 100, 10, 1, 9));
  board.stopping("worker1");
  board.child_line("worker0", "[trib.net] coordinator closed the connection");
  board.child_line("ps0", "receiving failed: Connection reset by peer");
  board.child_line("worker1", "its last words");
  board.print("trib: error: worker1 (pid 7) exited with status 1; stopping the cluster");
  const std::string text = out.text();
  EXPECT_EQ(text.find("closed the connection"), std::string::npos) << text;
  EXPECT_EQ(text.find("Connection reset"), std::string::npos) << text;
  EXPECT_NE(text.find("[worker1] its last words\n"), std::string::npos) << text;
  // Not redrawn under the error.
  EXPECT_TRUE(text.ends_with("stopping the cluster\n")) << text;
}

TEST(ProgressBoard, ErrorsAreKeptNotPrinted) {
  Captured out;
  ProgressBoard board(out.file(), false);
  board.child_line("worker0", "trib: error: training.batch 100000 is larger than a worker's share");
  board.child_line("worker1", "trib: error: training.batch 100000 is larger than a worker's share");
  EXPECT_EQ(out.text(), "");
  EXPECT_EQ(board.error_of("worker1"), "training.batch 100000 is larger than a worker's share");
  EXPECT_EQ(board.error_of("ps0"), "");
}

// A killed worker's peers see their connections reset before the launcher sees it exit: those
// transport lines are held, and dropped when the job turns out to be stopping.
TEST(ProgressBoard, TransportLinesAreHeldThenDroppedWhenStopping) {
  Captured out;
  ProgressBoard board(out.file(), false, std::chrono::milliseconds(500));
  board.child_line("ps0", "2026-11-23T23:08:14.336Z info [trib.net] receiving from worker failed: Connection reset by peer");
  board.print_transport("2026-11-23T23:08:14.337Z info [trib.net] receiving from worker failed: Connection reset by peer");
  board.child_line("worker0", "step 3");
  board.tick();  // too soon: still held
  EXPECT_EQ(out.text(), "[worker0] step 3\n");
  board.stopping("worker1");
  board.print("trib: error: worker1 (pid 9) was killed by signal 9 (Killed); stopping the cluster");
  board.tick(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(out.text(), "[worker0] step 3\ntrib: error: worker1 (pid 9) was killed by signal 9 (Killed); stopping the cluster\n");
}

TEST(ProgressBoard, TransportLinesArePrintedAfterTheHold) {
  Captured out;
  ProgressBoard board(out.file(), false, std::chrono::milliseconds(500));
  board.child_line("ps0", "info [trib.net] a peer from 10.0.0.9 was refused");
  board.tick(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  EXPECT_EQ(out.text(), "[ps0] info [trib.net] a peer from 10.0.0.9 was refused\n");
}

}  // namespace
}  // namespace trib::cluster
