// Kafka offsets inside a DataPosition. A source adds one field per partition it owns,
//   kafka.<topic>.<partition> = <next offset to hand out>
// next to the fields of the pipeline's other stages, so a checkpoint's data position holds the
// exact Kafka offsets the model has consumed. With several workers, the trainer merges their
// positions (their partitions are disjoint) into the one stored with the model.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "trib/data/data_position.h"

namespace trib::stream {

using PartitionOffsets = std::map<std::int32_t, std::int64_t>;

// "kafka.<topic>.<partition>"
std::string offset_key(std::string_view topic, std::int32_t partition);

// Sets one field per partition (replacing those already there for that partition).
void set_offsets(data::DataPosition& position, std::string_view topic, const PartitionOffsets& offsets);

// The offsets `position` holds for `topic` (possibly none). Throws InvalidArgument when it
// holds Kafka offsets of other topics only (a position saved by a source reading something
// else), and Corruption for a malformed field.
PartitionOffsets offsets_of(const data::DataPosition& position, std::string_view topic);

// `into` plus the Kafka fields of `from`; InvalidArgument naming the field when both hold an
// offset for the same partition (two workers claim it).
void merge_offsets(data::DataPosition& into, const data::DataPosition& from);

}  // namespace trib::stream
