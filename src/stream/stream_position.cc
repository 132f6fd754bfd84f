#include "trib/stream/stream_position.h"

#include <charconv>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

constexpr std::string_view kPrefix = "kafka.";

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

}  // namespace

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
    if (!split_key(key, t, partition)) continue;
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
