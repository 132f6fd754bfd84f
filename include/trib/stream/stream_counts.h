// What a stream job did with the events it consumed, per worker, in numbers that continue
// across --resume: a checkpoint stores each worker's counts next to the Kafka progress
// ("stream_metrics.w<worker>.<count>" fields of the kafka section, see stream_position.h), and a
// resumed worker starts from them. Every consumed event is exactly one of trained, skipped or
// dead-lettered.
#pragma once

#include <cstdint>
#include <map>

#include <nlohmann/json.hpp>

#include "trib/data/data_position.h"

namespace trib::stream {

struct StreamCounts {
  std::int64_t trained = 0;        // events of applied updates
  std::int64_t skipped = 0;        // events of steps skipped on purpose (a non-finite gradient)
  std::int64_t dead_lettered = 0;  // poison records, sent to the dead-letter topic
  std::int64_t consumed() const { return trained + skipped + dead_lettered; }

  StreamCounts& operator+=(const StreamCounts& o);
  bool operator==(const StreamCounts&) const = default;
};

// Writes `counts` as worker `worker`'s fields.
void save_counts(data::DataPosition& position, int worker, const StreamCounts& counts);
// Every worker's counts in `position` (none: an empty map). Corruption for a malformed field.
std::map<int, StreamCounts> counts_in(const data::DataPosition& position);

// {"consumed", "trained", "skipped", "dead_lettered"}
nlohmann::json to_json(const StreamCounts& counts);
// The final summary line of a stream job's metrics.jsonl: the totals over workers, plus
// "workers": {"<index>": counts}, and "split": "stream_summary".
nlohmann::json summary_json(const std::map<int, StreamCounts>& per_worker);

}  // namespace trib::stream
