#include "trib/stream/stream_counts.h"

#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

constexpr std::string_view kPrefix = "stream_metrics.w";

std::int64_t* field(StreamCounts& c, std::string_view name) {
  if (name == "trained") return &c.trained;
  if (name == "skipped") return &c.skipped;
  if (name == "dead_lettered") return &c.dead_lettered;
  return nullptr;
}

}  // namespace

StreamCounts& StreamCounts::operator+=(const StreamCounts& o) {
  trained += o.trained;
  skipped += o.skipped;
  dead_lettered += o.dead_lettered;
  return *this;
}

void save_counts(data::DataPosition& position, int worker, const StreamCounts& counts) {
  position.set_int(fmt::format("{}{}.trained", kPrefix, worker), counts.trained);
  position.set_int(fmt::format("{}{}.skipped", kPrefix, worker), counts.skipped);
  position.set_int(fmt::format("{}{}.dead_lettered", kPrefix, worker), counts.dead_lettered);
}

std::map<int, StreamCounts> counts_in(const data::DataPosition& position) {
  std::map<int, StreamCounts> out;
  for (const auto& [key, value] : position.fields()) {
    std::string_view k = key;
    if (!k.starts_with(kPrefix)) continue;
    k.remove_prefix(kPrefix.size());
    const std::size_t dot = k.find('.');
    int worker = -1;
    const std::string_view index = k.substr(0, dot);
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), worker);
    std::int64_t* slot = nullptr;
    if (dot != std::string_view::npos && ec == std::errc() && end == index.data() + index.size() && worker >= 0)
      slot = field(out[worker], k.substr(dot + 1));
    TRIB_CHECK(slot != nullptr, Corruption, "data position field '{}' is not a worker's stream count", key);
    *slot = position.get_int(key);
  }
  return out;
}

nlohmann::json to_json(const StreamCounts& c) {
  return {{"consumed", c.consumed()}, {"trained", c.trained}, {"skipped", c.skipped}, {"dead_lettered", c.dead_lettered}};
}

nlohmann::json summary_json(const std::map<int, StreamCounts>& per_worker) {
  StreamCounts total;
  nlohmann::json workers = nlohmann::json::object();
  for (const auto& [w, c] : per_worker) {
    total += c;
    workers[std::to_string(w)] = to_json(c);
  }
  nlohmann::json j = to_json(total);
  j["split"] = "stream_summary";
  j["workers"] = std::move(workers);
  return j;
}

}  // namespace trib::stream
