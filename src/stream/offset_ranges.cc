#include "trib/stream/offset_ranges.h"

#include <charconv>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::stream {

void OffsetRanges::insert(std::int64_t begin, std::int64_t end) {
  if (end <= begin) return;
  // Absorb every range that overlaps or touches [begin, end).
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= begin) {
      begin = prev->first;
      end = std::max(end, prev->second);
      it = ranges_.erase(prev);
    }
  }
  while (it != ranges_.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace(begin, end);
}

void OffsetRanges::insert(const OffsetRanges& other) {
  for (const auto& [b, e] : other.ranges_) insert(b, e);
}

bool OffsetRanges::contains(std::int64_t offset) const {
  auto it = ranges_.upper_bound(offset);
  if (it == ranges_.begin()) return false;
  return std::prev(it)->second > offset;
}

void OffsetRanges::erase_below(std::int64_t offset) {
  while (!ranges_.empty() && ranges_.begin()->first < offset) {
    auto first = ranges_.begin();
    const std::int64_t end = first->second;
    ranges_.erase(first);
    if (end > offset) {
      ranges_.emplace(offset, end);
      break;
    }
  }
}

std::int64_t OffsetRanges::first_gap(std::int64_t from) const {
  auto it = ranges_.upper_bound(from);
  if (it == ranges_.begin()) return from;
  const auto prev = std::prev(it);
  return prev->second > from ? prev->second : from;  // ranges never touch: the end is a gap
}

std::int64_t OffsetRanges::count() const {
  std::int64_t n = 0;
  for (const auto& [b, e] : ranges_) n += e - b;
  return n;
}

std::string OffsetRanges::to_string() const {
  std::string out;
  for (const auto& [b, e] : ranges_) {
    if (!out.empty()) out += ',';
    out += e - b == 1 ? fmt::format("{}", b) : fmt::format("{}-{}", b, e - 1);
  }
  return out;
}

OffsetRanges OffsetRanges::parse(std::string_view text) {
  OffsetRanges out;
  std::int64_t last_end = -1;
  auto number = [&](std::string_view s) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    TRIB_CHECK(ec == std::errc() && end == s.data() + s.size() && !s.empty() && v >= 0, Corruption,
               "offset ranges '{}': '{}' is not an offset", text, s);
    return v;
  };
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    const std::int64_t b = number(item.substr(0, dash));
    const std::int64_t e = dash == std::string_view::npos ? b : number(item.substr(dash + 1));
    TRIB_CHECK(b <= e && b > last_end, Corruption,
               "offset ranges '{}': '{}' is not above the range before it, or ends before it begins", text, item);
    out.insert(b, e + 1);
    last_end = e;
    at = comma + 1;
  }
  return out;
}

}  // namespace trib::stream
