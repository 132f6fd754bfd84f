#include "trib/train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "trib/core/progress_sample.h"

namespace trib::train {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  auto t = static_cast<std::int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

Progress::Progress(std::FILE* out, ProgressMode mode, std::int64_t total_steps, std::string prefix)
    : out_(out), mode_(mode), interactive_(mode == ProgressMode::terminal), total_(total_steps),
      prefix_(std::move(prefix)) {}

bool Progress::is_terminal(std::FILE* f) { return ::isatty(::fileno(f)) == 1; }

void Progress::clear_line() {
  if (interactive_ && line_open_) {
    std::fputs("\r\033[K", out_);
    line_open_ = false;
  }
}

void Progress::step(std::int64_t step, double epoch, double loss, std::int64_t images) {
  auto now = Clock::now();
  window_images_ += images;
  loss_avg_ = loss_avg_ == 0 ? loss : 0.95 * loss_avg_ + 0.05 * loss;
  double window = std::chrono::duration<double>(now - window_start_).count();
  if (window >= 0.5) {
    double r = window_images_ / window;
    rate_ = rate_ == 0 ? r : 0.7 * rate_ + 0.3 * r;
    window_images_ = 0;
    window_start_ = now;
  }
  double since = std::chrono::duration<double>(now - last_draw_).count();
  double interval = mode_ == ProgressMode::terminal ? 0.1 : mode_ == ProgressMode::lines ? 0.5 : plain_interval_s;
  if (since < interval && step != total_) return;
  last_draw_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double eta = step > 0 ? elapsed / step * (total_ - step) : NAN;
  if (mode_ == ProgressMode::lines) {
    fmt::print(out_, "{}\n", format_progress_line({step, std::max<std::int64_t>(total_, 0), epoch, rate_, loss_avg_,
                                                   total_ > 0 && std::isfinite(eta) ? eta : -1.0}));
  } else if (total_ <= 0) {
    // No known length (a stream): no bar, no epoch, no ETA.
    if (interactive_) {
      fmt::print(out_, "\r\033[K{}step {}  {:.0f} examples/s  loss {:.4f}", prefix_, step, rate_, loss_avg_);
      line_open_ = true;
    } else {
      fmt::print(out_, "{}step {} examples_per_s {:.0f} loss {:.4f}\n", prefix_, step, rate_, loss_avg_);
    }
  } else if (interactive_) {
    constexpr int kWidth = 24;
    int filled = static_cast<int>(kWidth * std::min<double>(1.0, double(step) / total_));
    std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
    fmt::print(out_, "\r\033[K{}[{}] step {}/{}  epoch {:.2f}  {:.0f} img/s  loss {:.4f}  ETA {}",
               prefix_, bar, step, total_, epoch, rate_, loss_avg_, format_duration(eta));
    line_open_ = true;
  } else {
    fmt::print(out_, "{}step {}/{} epoch {:.2f} images_per_s {:.0f} loss {:.4f} eta {}\n", prefix_,
               step, total_, epoch, rate_, loss_avg_, format_duration(eta));
  }
  std::fflush(out_);
}

void Progress::eval(const EvalRow& train, const EvalRow& test) {
  clear_line();
  if (!table_header_done_) {
    fmt::print(out_, "{}{:>8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9}\n", prefix_, "step", "epoch",
               "train_loss", "train_acc", "test_loss", "test_acc", "time");
    table_header_done_ = true;
  }
  auto cell = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.4f}", v); };
  fmt::print(out_, "{}{:>8} {:>7.2f} {:>10} {:>10} {:>10.4f} {:>10.4f} {:>9}\n", prefix_, test.step, test.epoch,
             cell(train.loss), cell(train.accuracy), test.loss, test.accuracy, format_duration(test.time_s));
  std::fflush(out_);
}

void Progress::message(const std::string& line) {
  clear_line();
  fmt::print(out_, "{}{}\n", prefix_, line);
  std::fflush(out_);
}

void Progress::summary(const RunSummary& s) {
  clear_line();
  fmt::print(out_,
             "{}done: test accuracy {:.4f}, test loss {:.4f}, {} steps ({:.2f} epochs) in {} "
             "({:.1f} s), {:.0f} images/s\n",
             prefix_, s.accuracy, s.loss, s.steps, s.epochs, format_duration(s.wall_s), s.wall_s,
             s.images_per_s);
  std::fflush(out_);
}

}  // namespace trib::train
