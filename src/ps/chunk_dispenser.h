// Parameter server 0's side of `data.assignment: dynamic`: it hands out the training split
// in chunks, so that the workers present read each epoch between them, whoever comes or
// goes (docs/fault_tolerance.md, "Elastic workers and their data").
//
// Epoch e is the split in the order of (training.seed, e), cut into batches; batches
// [k*C, (k+1)*C) are chunk k. Fresh chunks go out in order, epoch after epoch, until the
// job's batches are handed out. A worker reports, with every applied push, how far into its
// chunk it has read (its data cursor); what it holds beyond that when it is lost, leaves or
// finishes goes back and is handed out before any fresh chunk. So a batch is applied once:
// the server records progress only from applied pushes, and gives out only what is unread.
// Not thread-safe: the server calls it under its own lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trib::ps {

namespace state_io {
class Writer;
class Reader;
}  // namespace state_io

// The same on every worker: what the split and the job make of it.
struct ChunkPlan {
  std::int64_t batches_per_epoch = 0;  // whole batches of the split
  std::int64_t chunk_batches = 8;      // batches per chunk
  std::int64_t total_batches = 0;      // what the whole job reads
  bool operator==(const ChunkPlan&) const = default;
};

// Batches [begin, end) of epoch `epoch`, from chunk `index`.
struct Chunk {
  std::int64_t epoch = 0, index = 0, begin = 0, end = 0;
  bool operator==(const Chunk&) const = default;
};

class ChunkDispenser {
 public:
  enum class Answer { granted, wait, exhausted };
  // Up to `want` chunks for `worker`: returned ones first, then fresh ones. `wait` when none
  // is free now but chunks held by others may yet come back (only if `may_wait`);
  // `exhausted` when every batch of the job is read or being read by another worker.
  // Workers that step together (sync, averaging, bounded) may not wait: the holder's round
  // or clock would wait for the waiting worker in turn.
  // The first claim fixes the plan; the data then starts at the chunk holding batch
  // `first_batch` of the job (a resumed run: its checkpoint's step times the workers).
  Answer grant(int worker, const ChunkPlan& plan, int want, std::vector<Chunk>& out, bool may_wait = true,
               std::int64_t first_batch = 0);
  // `worker`'s applied push says it has read chunk (epoch, index) up to batch `next`.
  // Ignored for chunks it does not hold (an old process's, a released one).
  void progress(int worker, std::int64_t epoch, std::int64_t index, std::int64_t next);
  // `worker` is gone (lost, left, finished, or replaced): the unread part of what it holds
  // goes back. Returns the batches returned.
  std::int64_t release(int worker);

  std::int64_t applied_batches() const { return applied_; }
  std::int64_t total_batches() const { return plan_.total_batches; }
  std::int64_t returned_batches() const { return returned_total_; }
  // Everything, copied to a new backup (src/ps/ps_server_state.cc).
  void save(state_io::Writer& out) const;
  void load(state_io::Reader& in);

 private:
  using Key = std::pair<std::int64_t, std::int64_t>;  // (epoch, index)
  bool planned_ = false;
  ChunkPlan plan_;
  std::int64_t next_epoch_ = 0, next_index_ = 0;  // the next fresh chunk
  std::int64_t granted_fresh_ = 0;                // batches in fresh chunks handed out
  std::int64_t applied_ = 0, returned_total_ = 0;
  std::deque<Chunk> returned_;
  std::map<int, std::map<Key, Chunk>> held_;  // per worker: chunk -> its unread part [begin, end)
};

// A worker's data cursor names its chunk as "chunk=E:K:NEXT:END" among its fields; these
// turn the field's value into the numbers and back. parse returns false for anything else.
std::string chunk_field(const Chunk& chunk, std::int64_t next);
bool parse_chunk_field(const std::string& text, Chunk& chunk, std::int64_t& next);

}  // namespace trib::ps
