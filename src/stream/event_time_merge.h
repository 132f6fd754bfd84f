// Merges the records of several partitions into one sequence that a re-read from the same
// offsets reproduces, which is what lets a shuffle buffer (or anything that re-reads a window
// after a restart) resume exactly.
//
// Records arrive from the broker interleaved by fetch timing, which a re-read does not
// repeat. So records are handed out by event time instead: the head with the smallest
// (timestamp, partition) goes first, and only once no partition can still deliver an earlier
// one. A partition with nothing buffered holds the others back while
//   - the broker has records for it that have not arrived (high watermark > fetched offset,
//     or the watermark is not known yet), or
//   - the candidate is younger than `grace_ms`: an earlier record may still be on its way.
// Both waits are bounded (stall_ms for the first), so an idle or dead partition only delays.
// The order is reproducible when a record reaches the broker within grace_ms of its
// timestamp; docs/streaming.md discusses the limits.
//
// Not thread-safe; KafkaSource guards it with its mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "trib/stream/stream_position.h"

namespace trib::stream::detail {

struct PendingRecord {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = 0;
  // Not handed out, only advances the offset: poison (already dead-lettered), or applied before
  // a restore.
  bool skip = false;
  std::int32_t label = 0;
  std::int64_t id = 0;
  std::vector<float> features;
};

struct MergeOptions {
  bool replayable = true;  // false: hand out whatever is buffered, oldest first, never wait
  std::int64_t grace_ms = 200;
  std::int64_t stall_ms = 2000;
};

class EventTimeMerge {
 public:
  explicit EventTimeMerge(MergeOptions options) : options_(options) {}

  // Starts tracking a partition whose next record is at `offset`.
  void add(std::int32_t partition, std::int64_t offset, std::int64_t now_ms);
  void remove(std::int32_t partition);
  // Forgets what is buffered and continues at `offset` (a seek).
  void reset(std::int32_t partition, std::int64_t offset, std::int64_t now_ms);
  bool owns(std::int32_t partition) const { return parts_.contains(partition); }
  std::vector<std::int32_t> partitions() const;
  std::size_t partition_count() const { return parts_.size(); }

  // A record fetched from `partition`; records of a partition come in offset order. Returns
  // false (and ignores it) for a partition not owned or an offset already passed.
  bool push(std::int32_t partition, PendingRecord record, std::int64_t now_ms);
  // The broker's high watermark (offset after its last record), as last seen.
  void set_high_watermark(std::int32_t partition, std::int64_t high_watermark, std::int64_t now_ms);

  // Appends up to `max` records to `out` in merge order and returns how many.
  std::int64_t take(std::int64_t max, std::int64_t now_ms, std::vector<PendingRecord>& out);
  // After a take() held back by the grace period: the time it ends; nullopt when waiting for
  // records to arrive instead.
  std::optional<std::int64_t> retry_at() const { return retry_at_; }

  // Next offset to hand out, per owned partition: the position of everything handed out.
  PartitionOffsets positions() const;
  std::int64_t next_offset(std::int32_t partition) const { return parts_.at(partition).next; }
  std::int64_t buffered(std::int32_t partition) const;
  std::int64_t buffered() const { return buffered_; }
  std::int64_t high_watermark(std::int32_t partition) const { return parts_.at(partition).high_watermark; }

 private:
  struct Part {
    std::deque<PendingRecord> queue;
    std::int64_t next = 0;            // offset after the last record handed out (or skipped)
    std::int64_t fetched = 0;         // offset after the last record received
    std::int64_t high_watermark = -1;  // -1: not known yet
    std::int64_t last_progress_ms = 0;  // when a record or a new watermark last arrived
  };
  void skip_records(Part& part);
  // Whether an empty partition may still deliver a record older than `candidate_ts`.
  bool holds_back(const Part& part, std::int64_t candidate_ts, std::int64_t now_ms);

  MergeOptions options_;
  std::map<std::int32_t, Part> parts_;
  std::int64_t buffered_ = 0;  // records in all queues
  std::optional<std::int64_t> retry_at_;
};

}  // namespace trib::stream::detail
