#include "trib/data/dataset_cursor.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "trib/core/error.h"
#include "trib/data/data_position.h"

namespace trib::data {
namespace {

// The fields that order one worker's cursors; every other field is a setting they share.
constexpr std::string_view kEpoch = "epoch";
constexpr std::string_view kCursor = "cursor";
constexpr std::string_view kOwesEnd = "batcher.owes_end";  // how the batcher ends an epoch, not where

DataPosition cursor_from(const std::string& text) {
  try {
    return DataPosition::parse(text);
  } catch (const Corruption& e) {
    throw InvalidArgument(fmt::format("a data cursor that is not a data position: {}", e.what()));
  }
}

// (epoch, cursor), or nullopt for a position that orders no examples of a shard.
std::optional<std::pair<std::int64_t, std::int64_t>> place(const DataPosition& p) {
  if (!p.has(kEpoch) || !p.has(kCursor)) return std::nullopt;
  std::int64_t epoch = 0, cursor = 0;
  try {
    epoch = p.get_int(kEpoch);
    cursor = p.get_int(kCursor);
  } catch (const Corruption& e) {
    throw InvalidArgument(fmt::format("a data cursor's epoch or cursor is not an integer: {}", e.what()));
  }
  TRIB_CHECK(epoch >= 0 && cursor >= 0, InvalidArgument, "a data cursor at epoch {} cursor {}", epoch, cursor);
  return std::make_pair(epoch, cursor);
}

bool same_settings(const DataPosition& a, const DataPosition& b) {
  auto settings = [](const DataPosition& p) {
    auto fields = p.fields();
    for (std::string_view k : {kEpoch, kCursor, kOwesEnd})
      if (auto it = fields.find(k); it != fields.end()) fields.erase(it);
    return fields;
  };
  return settings(a) == settings(b);
}

}  // namespace

bool dataset_cursor_covers(const std::string& have, const std::string& pushed) {
  const DataPosition theirs = cursor_from(pushed);
  if (have.empty()) return false;
  const DataPosition mine = cursor_from(have);
  const auto at = place(theirs), kept = place(mine);
  return at && kept && same_settings(mine, theirs) && *at <= *kept;
}

std::string dataset_cursor_merge(const std::string& /*have*/, const std::string& pushed) {
  cursor_from(pushed);  // a server keeps only what it can compare later
  return pushed;
}

}  // namespace trib::data
