// How two data cursors of one file-job worker compare (a parameter-server job over a dataset
// in fixed shards: DatasetSource's position, through the batcher and the prefetcher). A
// worker's cursor names the unread part of its shard of the current epoch: "epoch" and
// "cursor" (examples of the shard's part of that epoch already handed out), beside the
// settings it was taken under ("seed", "shard", "dataset_size", ...). Its batches are the
// permutation of (seed, epoch) read in order, so its cursors only grow, and two batches
// taken at the same cursor hold the same examples. A parameter server keeps the cursor of
// the worker's last push it applied; a push whose cursor is not past it carries a batch the
// server applied already (docs/fault_tolerance.md, "File jobs: a worker lost between its
// pushes", ps::DataCursors).
#pragma once

#include <string>

namespace trib::data {

// Whether the batch of a push with cursor `pushed` is one that a server which kept `have`
// applied: both taken under the same settings (every field but "epoch", "cursor" and
// "batcher.owes_end" equal) and (epoch, cursor) of `pushed` not past `have`'s. False when
// `have` is empty (no push applied), or either names no epoch and cursor (a cursor of
// another kind: dynamic chunks, Kafka progress). InvalidArgument for text that is not a
// serialized position, or an epoch or cursor that is not a non-negative integer.
bool dataset_cursor_covers(const std::string& have, const std::string& pushed);

// What a server keeps once it applied `pushed` over `have`: `pushed`, the worker's newest
// (a file job's batches are contiguous ranges of the shard, so there is nothing to merge).
// InvalidArgument as dataset_cursor_covers for a `pushed` that is not a position.
std::string dataset_cursor_merge(const std::string& have, const std::string& pushed);

}  // namespace trib::data
