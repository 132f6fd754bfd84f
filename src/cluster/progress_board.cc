#include "cluster/progress_board.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

namespace trib::cluster {

namespace {

// "1:02:03" or "4:05"; "--:--" unknown. (train::format_duration's twin: cluster does not link train.)
std::string duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  auto t = static_cast<std::int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

constexpr std::string_view kErrorPrefix = "trib: error: ";

bool is_transport_line(const std::string& text) { return text.find("[trib.net]") != std::string::npos; }

}  // namespace

ProgressBoard::ProgressBoard(std::FILE* out, bool live, std::chrono::milliseconds hold)
    : out_(out), live_(live), hold_(hold) {}

void ProgressBoard::clear() {
  if (drawn_) {
    std::fputs("\r\033[K", out_);
    drawn_ = false;
  }
}

void ProgressBoard::draw() {
  std::string line = live_line_locked();
  if (line.empty()) return;
  fmt::print(out_, "\r\033[K{}", line);
  drawn_ = true;
}

void ProgressBoard::child_line(const std::string& child, const std::string& text) {
  std::lock_guard lock(mu_);
  if (text.starts_with(kErrorPrefix)) {
    errors_[child] = text.substr(kErrorPrefix.size());
    return;
  }
  if (stopping_ && child != heard_) return;
  if (live_ && !stopping_) {
    if (std::optional<ProgressSample> s = parse_progress_line(text)) {
      samples_[child] = *s;
      draw();
      std::fflush(out_);
      return;
    }
  }
  std::string line = fmt::format("[{}] {}", child, text);
  if (is_transport_line(text) && !stopping_) held_.push_back({std::chrono::steady_clock::now(), child, std::move(line)});
  else print_locked(line);
}

void ProgressBoard::print_transport(const std::string& text) {
  std::lock_guard lock(mu_);
  if (!stopping_) held_.push_back({std::chrono::steady_clock::now(), "", text});
}

void ProgressBoard::tick(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  while (!held_.empty() && now - held_.front().at >= hold_) {
    print_locked(held_.front().text);
    held_.pop_front();
  }
}

void ProgressBoard::print(const std::string& text) {
  std::lock_guard lock(mu_);
  print_locked(text);
}

void ProgressBoard::print_locked(const std::string& text) {
  clear();
  fmt::print(out_, "{}\n", text);
  if (live_ && !stopping_) draw();
  std::fflush(out_);
}

void ProgressBoard::stopping(const std::string& heard) {
  std::lock_guard lock(mu_);
  clear();
  stopping_ = true;
  heard_ = heard;
  for (const Held& h : held_)
    if (!heard.empty() && h.child == heard) print_locked(h.text);
  held_.clear();
  std::fflush(out_);
}

void ProgressBoard::finish() {
  std::lock_guard lock(mu_);
  for (const Held& h : held_) print_locked(h.text);
  held_.clear();
  clear();
  samples_.clear();
  std::fflush(out_);
}

// The slowest worker sets step, epoch and ETA (the job ends when it does); throughput is the
// sum over workers, loss their mean.
std::string ProgressBoard::error_of(const std::string& child) const {
  std::lock_guard lock(mu_);
  auto e = errors_.find(child);
  return e == errors_.end() ? "" : e->second;
}

std::string ProgressBoard::live_line() const {
  std::lock_guard lock(mu_);
  return live_line_locked();
}

std::string ProgressBoard::live_line_locked() const {
  if (samples_.empty()) return "";
  const ProgressSample* slowest = nullptr;
  double rate = 0, loss = 0, eta = -1;
  for (const auto& [name, s] : samples_) {
    if (slowest == nullptr || s.step < slowest->step) slowest = &s;
    rate += s.images_per_s;
    loss += s.loss;
    if (s.eta_s >= 0) eta = std::max(eta, s.eta_s);
  }
  loss /= static_cast<double>(samples_.size());
  const std::size_t n = samples_.size();
  std::string workers = fmt::format("{} worker{}", n, n == 1 ? "" : "s");
  if (slowest->total <= 0)
    return fmt::format("step {}  {:.0f} examples/s  loss {:.4f}  ({})", slowest->step, rate, loss, workers);
  constexpr int kWidth = 24;
  int filled = static_cast<int>(kWidth * std::min<double>(1.0, double(slowest->step) / double(slowest->total)));
  return fmt::format("[{}{}] step {}/{}  epoch {:.2f}  {:.0f} img/s  loss {:.4f}  ETA {}  ({})", std::string(filled, '#'),
                     std::string(kWidth - filled, '.'), slowest->step, slowest->total, slowest->epoch, rate, loss,
                     duration(eta), workers);
}

}  // namespace trib::cluster
