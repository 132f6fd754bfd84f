#include "trib/stream/stream_position.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

constexpr std::string_view kPrefix = "kafka.";
constexpr std::string_view kMetricsPrefix = "stream_metrics.";
constexpr std::string_view kApplied = ".applied";
constexpr std::string_view kFrom = ".from";

template <typename T>
bool parse_int(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// Splits "kafka.<topic>.<partition>" at its last dot; topic names may contain dots.
bool split_key(std::string_view key, std::string_view& topic, std::int32_t& partition) {
  if (!key.starts_with(kPrefix)) return false;
  key.remove_prefix(kPrefix.size());
  std::size_t dot = key.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  topic = key.substr(0, dot);
  return parse_int(key.substr(dot + 1), partition);
}

enum class Field { offset, applied, from };

// Splits any progress key: "kafka.<topic>.<partition>[.applied|.from]".
bool split_progress_key(std::string_view key, std::string_view& topic, std::int32_t& partition, Field& field) {
  field = Field::offset;
  if (key.ends_with(kApplied)) {
    field = Field::applied;
    key.remove_suffix(kApplied.size());
  } else if (key.ends_with(kFrom)) {
    field = Field::from;
    key.remove_suffix(kFrom.size());
  }
  return split_key(key, topic, partition);
}

std::int64_t parse_offset(std::string_view key, const std::string& value) {
  std::int64_t offset = 0;
  TRIB_CHECK(parse_int(std::string_view(value), offset) && offset >= 0, Corruption,
             "data position field '{}' = '{}' is not a partition's offset", key, value);
  return offset;
}

// Every topic's progress in `position`, by topic.
std::map<std::string, PartitionProgressMap, std::less<>> all_progress(const data::DataPosition& position) {
  std::map<std::string, PartitionProgressMap, std::less<>> out;
  std::map<std::string, std::set<std::int32_t>, std::less<>> has_offset;
  for (const auto& [key, value] : position.fields()) {
    std::string_view topic;
    std::int32_t partition = 0;
    Field field{};
    if (!split_progress_key(key, topic, partition, field)) continue;
    TRIB_CHECK(partition >= 0, Corruption, "data position field '{}' names a negative partition", key);
    PartitionProgress& p = out[std::string(topic)][partition];
    switch (field) {
      case Field::offset:
        p.next = parse_offset(key, value);
        has_offset[std::string(topic)].insert(partition);
        break;
      case Field::applied:
        p.applied = OffsetRanges::parse(value);
        break;
      case Field::from:
        p.from = parse_offset(key, value);
        break;
    }
  }
  for (auto& [topic, parts] : out)
    for (auto& [partition, p] : parts) {
      TRIB_CHECK(has_offset[topic].contains(partition), Corruption,
                 "data position has applied offsets or a claim for partition {} of '{}' but not its offset",
                 partition, topic);
      TRIB_CHECK(p.applied.empty() || p.applied.ranges().begin()->first > p.next, Corruption,
                 "data position: applied offsets of partition {} of '{}' ({}) must lie above its offset {}",
                 partition, topic, p.applied.to_string(), p.next);
    }
  return out;
}

void write_progress(data::DataPosition& position, std::string_view topic, std::int32_t partition,
                    const PartitionProgress& p) {
  const std::string key = offset_key(topic, partition);
  position.set_int(key, p.next);
  if (!p.applied.empty()) position.set(key + std::string(kApplied), p.applied.to_string());
  if (p.from > 0) position.set_int(key + std::string(kFrom), p.from);
}

}  // namespace

bool is_stream_field(std::string_view key) { return key.starts_with(kPrefix) || key.starts_with(kMetricsPrefix); }

data::DataPosition progress_fields(const data::DataPosition& position) {
  data::DataPosition out;
  for (const auto& [key, value] : position.fields())
    if (key.starts_with(kPrefix)) out.set(key, value);
  return out;
}

void set_progress(data::DataPosition& position, std::string_view topic, const PartitionProgressMap& progress) {
  data::DataPosition out;
  for (const auto& [key, value] : position.fields()) {
    std::string_view t;
    std::int32_t partition = 0;
    Field field{};
    if (split_progress_key(key, t, partition, field) && t == topic && progress.contains(partition)) continue;
    out.set(key, value);
  }
  for (const auto& [partition, p] : progress) write_progress(out, topic, partition, p);
  position = std::move(out);
}

PartitionProgressMap progress_in(const data::DataPosition& position, std::string_view topic) {
  offsets_of(position, topic);  // the same checks: another topic's position is refused
  auto all = all_progress(position);
  auto it = all.find(topic);
  return it == all.end() ? PartitionProgressMap{} : std::move(it->second);
}

void merge_claims(data::DataPosition& into, const data::DataPosition& from) {
  auto mine = all_progress(into);
  const auto theirs = all_progress(from);
  data::DataPosition out;
  for (const auto& [key, value] : into.fields())
    if (!key.starts_with(kPrefix)) out.set(key, value);
  for (const auto& [key, value] : from.fields())
    if (key.starts_with(kMetricsPrefix)) out.set(key, value);
  for (const auto& [topic, parts] : theirs)
    for (const auto& [partition, p] : parts) {
      auto& m = mine[topic];
      auto it = m.find(partition);
      if (it == m.end())
        m.emplace(partition, p);
      else
        it->second = merge_claims(it->second, p);
    }
  for (const auto& [topic, parts] : mine)
    for (const auto& [partition, p] : parts) write_progress(out, topic, partition, p);
  into = std::move(out);
}

namespace {

// Whether every offset `p` holds as done is done in `q` too.
bool done_within(const PartitionProgress& q, const PartitionProgress& p) {
  if (p.next > q.next && q.applied.first_gap(q.next) < p.next) return false;
  for (const auto& [begin, end] : p.applied.ranges()) {
    const std::int64_t from = std::max(begin, q.next);
    if (from < end && q.applied.first_gap(from) < end) return false;
  }
  return true;
}

// A cursor off the wire: a parse failure of any kind is the sender's fault.
data::DataPosition cursor_from(const std::string& text) {
  try {
    data::DataPosition position = data::DataPosition::parse(text);
    all_progress(position);  // every progress field checked here, once
    return position;
  } catch (const Error& e) {
    throw InvalidArgument(fmt::format("a data cursor that is not a stream position ({})", e.what()));
  }
}

}  // namespace

bool progress_covers(const data::DataPosition& have, const data::DataPosition& pushed) {
  const auto theirs = all_progress(pushed);
  if (theirs.empty()) return false;
  const auto mine = all_progress(have);
  for (const auto& [topic, parts] : theirs) {
    auto t = mine.find(topic);
    if (t == mine.end()) return false;
    for (const auto& [partition, p] : parts) {
      auto it = t->second.find(partition);
      if (it == t->second.end() || !done_within(it->second, p)) return false;
    }
  }
  return true;
}

bool cursor_covers(const std::string& have, const std::string& pushed) {
  const data::DataPosition theirs = cursor_from(pushed);
  return !have.empty() && progress_covers(cursor_from(have), theirs);
}

std::string merge_cursors(const std::string& have, const std::string& pushed) {
  data::DataPosition theirs = cursor_from(pushed);
  if (have.empty()) return pushed;
  data::DataPosition mine = cursor_from(have);
  merge_claims(mine, theirs);
  return mine.serialize();
}

std::string offset_key(std::string_view topic, std::int32_t partition) {
  return fmt::format("{}{}.{}", kPrefix, topic, partition);
}

void set_offsets(data::DataPosition& position, std::string_view topic, const PartitionOffsets& offsets) {
  for (const auto& [partition, offset] : offsets) position.set_int(offset_key(topic, partition), offset);
}

PartitionOffsets offsets_of(const data::DataPosition& position, std::string_view topic) {
  PartitionOffsets out;
  std::set<std::string> others;
  for (const auto& [key, value] : position.fields()) {
    std::string_view t;
    std::int32_t partition = 0;
    if (!split_key(key, t, partition)) continue;  // also skips ".applied" and ".from" fields
    if (t != topic) {
      others.insert(std::string(t));
      continue;
    }
    std::int64_t offset = 0;
    TRIB_CHECK(parse_int(std::string_view(value), offset) && offset >= 0 && partition >= 0, Corruption,
               "data position field '{}' = '{}' is not a partition's offset", key, value);
    out[partition] = offset;
  }
  TRIB_CHECK(!out.empty() || others.empty(), InvalidArgument,
             "data position holds Kafka offsets of topic(s) {}, not of '{}': it was saved by a source reading "
             "another topic",
             fmt::join(others, ", "), topic);
  return out;
}

void merge_offsets(data::DataPosition& into, const data::DataPosition& from) {
  for (const auto& [key, value] : from.fields()) {
    std::string_view topic;
    std::int32_t partition = 0;
    if (!split_key(key, topic, partition)) continue;
    TRIB_CHECK(!into.has(key), InvalidArgument,
               "data positions to merge both hold '{}': two workers claim partition {} of '{}'", key, partition,
               topic);
    into.set(key, value);
  }
}

}  // namespace trib::stream
