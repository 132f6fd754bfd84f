#include "trib/core/progress_sample.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace trib {

std::string format_progress_line(const ProgressSample& s) {
  return fmt::format("{}step={} total={} epoch={:.4f} images_per_s={:.1f} loss={:.6g} eta_s={:.1f}",
                     kProgressLinePrefix, s.step, s.total, s.epoch, s.images_per_s, s.loss,
                     std::isfinite(s.eta_s) ? s.eta_s : -1.0);
}

namespace {

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<ProgressSample> parse_progress_line(std::string_view line) {
  if (!line.starts_with(kProgressLinePrefix)) return std::nullopt;
  line.remove_prefix(kProgressLinePrefix.size());
  ProgressSample s;
  bool have_step = false;
  while (!line.empty()) {
    std::size_t space = line.find(' ');
    std::string_view field = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    if (field.empty()) continue;
    std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    bool ok = true;
    if (key == "step") ok = have_step = parse_number(value, s.step);
    else if (key == "total") ok = parse_number(value, s.total);
    else if (key == "epoch") ok = parse_number(value, s.epoch);
    else if (key == "images_per_s") ok = parse_number(value, s.images_per_s);
    else if (key == "loss") ok = parse_number(value, s.loss);
    else if (key == "eta_s") ok = parse_number(value, s.eta_s);
    // other keys: a newer worker's; ignored
    if (!ok) return std::nullopt;
  }
  if (!have_step) return std::nullopt;
  return s;
}

}  // namespace trib
