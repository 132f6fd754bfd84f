#include "sweep_table.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace trib::sweep {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::vector<std::string> render_table(const std::vector<TrialRecord>& trials, const std::string& metric, int best) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"trial", "parameters", "step", metric, "state"});
  for (const TrialRecord& t : trials) {
    std::string state = state_name(t.state);
    if (!t.note.empty() && (t.finished() || t.state == TrialState::waiting)) state += ": " + t.note;
    rows.push_back({trial_name(t.id) + (t.id == best ? " *" : ""), describe(t.params), std::to_string(t.step),
                    t.metric ? fmt::format("{:.4f}", *t.metric) : "-", state});
  }
  std::vector<std::size_t> width(5, 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < 4; ++i) width[i] = std::max(width[i], r[i].size());
  std::vector<std::string> lines;
  for (const auto& r : rows)
    lines.push_back(fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {}", r[0], width[0], r[1], width[1], r[2], width[2],
                                r[3], width[3], r[4]));
  return lines;
}

void LiveTable::draw(const std::vector<TrialRecord>& trials, bool force) {
  if (!interactive_) return;
  const double t = now_s();
  if (!force && t - last_draw_ < 0.5) return;
  last_draw_ = t;
  if (drawn_lines_ > 0) fmt::print(out_, "\033[{}A\033[J", drawn_lines_);
  std::vector<std::string> lines = render_table(trials, metric_, -1);
  for (const std::string& l : lines) fmt::print(out_, "{}\n", l);
  drawn_lines_ = lines.size();
  std::fflush(out_);
}

void LiveTable::event(const std::string& line) {
  if (interactive_) return;
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void LiveTable::final(const std::vector<TrialRecord>& trials, int best) {
  if (interactive_ && drawn_lines_ > 0) fmt::print(out_, "\033[{}A\033[J", drawn_lines_);
  drawn_lines_ = 0;
  for (const std::string& l : render_table(trials, metric_, best)) fmt::print(out_, "{}\n", l);
  std::fflush(out_);
}

}  // namespace trib::sweep
