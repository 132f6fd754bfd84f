// A set of Kafka offsets of one partition, held as disjoint ranges. It records which records
// above a partition's low watermark a job has already applied: with a shuffle buffer those
// are scattered over the window, and a resumed source must skip exactly them. Text form (in
// checkpoints): "12,15-17,20" (inclusive ranges, ascending).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace trib::stream {

class OffsetRanges {
 public:
  void insert(std::int64_t offset) { insert(offset, offset + 1); }
  // Adds [begin, end); nothing when end <= begin.
  void insert(std::int64_t begin, std::int64_t end);
  void insert(const OffsetRanges& other);
  bool contains(std::int64_t offset) const;
  // Drops every offset below `offset`.
  void erase_below(std::int64_t offset);
  // The smallest offset >= `from` the set does not hold.
  std::int64_t first_gap(std::int64_t from) const;

  bool empty() const { return ranges_.empty(); }
  std::int64_t count() const;  // offsets held
  const std::map<std::int64_t, std::int64_t>& ranges() const { return ranges_; }  // begin -> end

  std::string to_string() const;
  // Corruption naming the text when it is not ascending, disjoint, non-negative ranges.
  static OffsetRanges parse(std::string_view text);

  bool operator==(const OffsetRanges&) const = default;

 private:
  std::map<std::int64_t, std::int64_t> ranges_;  // begin -> end (exclusive), disjoint, not adjacent
};

}  // namespace trib::stream
