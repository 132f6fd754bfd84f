// The sweep's table: one row per trial with its parameters, step, metric and state. On a
// terminal it is redrawn in place; otherwise each change prints one line and the table is
// printed at the end.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "trial_record.h"

namespace trib::sweep {

std::vector<std::string> render_table(const std::vector<TrialRecord>& trials, const std::string& metric, int best);

class LiveTable {
 public:
  LiveTable(std::FILE* out, bool interactive, std::string metric)
      : out_(out), interactive_(interactive), metric_(std::move(metric)) {}
  // Redraws (a terminal) at most a few times a second, or when `force`.
  void draw(const std::vector<TrialRecord>& trials, bool force = false);
  // A line about one trial (not on a terminal, where the table shows it).
  void event(const std::string& line);
  void final(const std::vector<TrialRecord>& trials, int best);

 private:
  std::FILE* out_;
  bool interactive_;
  std::string metric_;
  std::size_t drawn_lines_ = 0;
  double last_draw_ = -1;
};

}  // namespace trib::sweep
