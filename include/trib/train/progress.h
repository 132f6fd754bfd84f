// What a person watching a run sees. On a terminal: one live line (step, images/s, loss, ETA)
// redrawn in place. Otherwise (a log file, CI): a plain line every few seconds. Under a
// local-cluster launcher on a terminal: machine-readable lines (core/progress_sample.h) that
// the launcher merges into one live line for all workers. Evaluations print a small table;
// the run ends with a summary.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace trib::train {

struct EvalRow {
  std::int64_t step = 0;
  double epoch = 0;
  std::string split;  // "train" or "test"
  double loss = 0;
  double accuracy = 0;
  double time_s = 0;
};

enum class ProgressMode {
  plain,     // a line every few seconds (a log)
  terminal,  // one live line redrawn in place
  lines,     // "@trib-progress ..." lines twice a second, for a launcher to draw
};

struct RunSummary {
  double accuracy = 0;   // last test accuracy
  double loss = 0;
  double wall_s = 0;
  double images_per_s = 0;
  std::int64_t steps = 0;
  double epochs = 0;
};

class Progress {
 public:
  Progress(std::FILE* out, ProgressMode mode, std::int64_t total_steps, std::string prefix = "");
  static bool is_terminal(std::FILE* f);

  // Called every step; cheap. Draws at most ~10 times a second (terminal) or every
  // `plain_interval_s` seconds (plain).
  void step(std::int64_t step, double epoch, double loss, std::int64_t images);
  void eval(const EvalRow& train, const EvalRow& test);
  void message(const std::string& line);
  void summary(const RunSummary& s);

  double plain_interval_s = 5.0;

 private:
  using Clock = std::chrono::steady_clock;
  void clear_line();
  std::FILE* out_;
  ProgressMode mode_;
  bool interactive_;  // mode_ == terminal
  std::int64_t total_;
  std::string prefix_;
  Clock::time_point start_ = Clock::now(), last_draw_{}, window_start_ = Clock::now();
  std::int64_t window_images_ = 0;
  double rate_ = 0;  // images per second, smoothed
  double loss_avg_ = 0;
  bool line_open_ = false;
  bool table_header_done_ = false;
};

// "1:02:03" or "4:05"
std::string format_duration(double seconds);

}  // namespace trib::train
