// How parameter servers and workers read the data cursors pushes carry, where the job's data
// gives them an order (a stream job whose partitions the job assigns: each worker's cursor is
// its applied Kafka progress, which only grows). The ps library keeps cursors as opaque text;
// the launcher, which knows the data, sets these (train_stream, stream_position.h).
// docs/fault_tolerance.md, "Parameter-server stream jobs: a lost worker resumes at its last
// applied push": a worker lost between its pushes to several servers resumes at the oldest of
// their cursors, and a server whose cursor already covers a push's acknowledges it without
// applying it.
#pragma once

#include <functional>
#include <string>

namespace trib::ps {

struct DataCursors {
  // Whether every record `pushed` holds as done is done in `applied` too (then the push's
  // batch is one this server applied). Throws InvalidArgument for text that is not a cursor.
  std::function<bool(const std::string& applied, const std::string& pushed)> covers;
  // What a server keeps after applying `pushed` over `applied`: the records done in either,
  // and the counts of `pushed`.
  std::function<std::string(const std::string& applied, const std::string& pushed)> merge;

  explicit operator bool() const { return covers && merge; }
};

}  // namespace trib::ps
