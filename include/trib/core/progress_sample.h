// A worker's progress as one machine-readable line, for a launcher that draws one live line
// for many workers (cluster/progress_board.h): "@trib-progress step=120 total=3000
// epoch=0.4 images_per_s=5321 loss=0.5123 eta_s=45". It crosses a process boundary
// (a child's stdout), so both ends share this one format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trib {

struct ProgressSample {
  std::int64_t step = 0;
  std::int64_t total = 0;  // 0: no known length (a stream)
  double epoch = 0;
  double images_per_s = 0;
  double loss = 0;
  double eta_s = -1;  // < 0: unknown
};

inline constexpr std::string_view kProgressLinePrefix = "@trib-progress ";

std::string format_progress_line(const ProgressSample& sample);
// The sample a line carries, or nullopt for any other line (or a malformed one).
std::optional<ProgressSample> parse_progress_line(std::string_view line);

}  // namespace trib
