// Kafka offsets inside a DataPosition. A source's position() adds one field per partition it
// owns,
//   kafka.<topic>.<partition> = <next offset to hand out>
// next to the fields of the pipeline's other stages. A checkpoint stores applied progress
// instead (applied_offsets.h), in the same key plus two optional ones:
//   kafka.<topic>.<partition>         = <next offset not applied: the low watermark>
//   kafka.<topic>.<partition>.applied = <offsets above it already applied: "12,15-17">
//   kafka.<topic>.<partition>.from    = <where a worker's claim begins; only between workers>
// With several workers, the trainer merges their claims (merge_claims) into the one stored
// with the model.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "trib/data/data_position.h"
#include "trib/stream/applied_offsets.h"

namespace trib::stream {

// "kafka.<topic>.<partition>"
std::string offset_key(std::string_view topic, std::int32_t partition);
// Whether a position field is part of a stream's progress ("kafka.": offsets, applied sets,
// claims; "stream_metrics.": counts that continue across a resume). The rest belongs to
// pipeline stages and cannot be merged between workers.
bool is_stream_field(std::string_view key);

// Sets one field per partition (replacing those already there for that partition).
void set_offsets(data::DataPosition& position, std::string_view topic, const PartitionOffsets& offsets);

// The offsets `position` holds for `topic` (possibly none). Throws InvalidArgument when it
// holds Kafka offsets of other topics only (a position saved by a source reading something
// else), and Corruption for a malformed field.
PartitionOffsets offsets_of(const data::DataPosition& position, std::string_view topic);

// Applied progress (see above) per partition: set_progress writes it (replacing the fields of
// those partitions), progress_in reads it (Corruption for a malformed field; a position with
// offsets only reads as progress with nothing applied above them).
void set_progress(data::DataPosition& position, std::string_view topic, const PartitionProgressMap& progress);
PartitionProgressMap progress_in(const data::DataPosition& position, std::string_view topic);

// The Kafka progress fields of `position` ("kafka."), without the counts: a restored
// checkpoint's progress that one worker claims as its own, with its own counts added.
data::DataPosition progress_fields(const data::DataPosition& position);

// `into` plus the stream fields of `from` (is_stream_field), for workers' claims: a partition
// both hold is merged by merge_claims (it moved between workers within a run); other fields
// of `from` replace those of `into`.
void merge_claims(data::DataPosition& into, const data::DataPosition& from);

// Whether every record `pushed` holds as done (below its offset, or applied above it) is done
// in `have` too, for every partition of every topic `pushed` names; false when `pushed` holds
// no Kafka progress. A worker's cursors only grow, so a push whose cursor an earlier one
// covers carries a batch that was applied already (ps::DataCursors).
bool progress_covers(const data::DataPosition& have, const data::DataPosition& pushed);
// The same over encoded positions (DataPosition::serialize), as a parameter server keeps a
// worker's cursor: an empty `have` covers nothing. InvalidArgument for text that is not a
// position or holds malformed progress.
bool cursor_covers(const std::string& have, const std::string& pushed);
// `have` with `pushed` merged in (merge_claims: the records done in either, the counts of
// `pushed`), encoded; `pushed` when `have` is empty. InvalidArgument as cursor_covers.
std::string merge_cursors(const std::string& have, const std::string& pushed);

// `into` plus the Kafka fields of `from`; InvalidArgument naming the field when both hold an
// offset for the same partition (two workers claim it).
void merge_offsets(data::DataPosition& into, const data::DataPosition& from);

}  // namespace trib::stream
