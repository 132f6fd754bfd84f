// Which records of each partition a job has applied (their batch's update happened), as
// opposed to read. A shuffle buffer and a prefetcher hold records that were read but not yet
// trained on; a checkpoint that saved the read offsets would skip them after a restore, and
// one that saved where the shuffle window began would train the window's applied records
// twice. So positions are derived from applied records:
//
//   next     the partition's low watermark: the smallest offset not yet applied (or consumed
//            without training: a poison record). Every record below it is done; this is what
//            a commit to the group may say, and where a resumed source starts reading.
//   applied  offsets above `next` that are done too (scattered by the shuffle window; bounded
//            by it). A resumed source skips them.
//
// Positions are per partition, not per worker: a resumed job may give a partition to another
// worker. A tracker records hand-outs (on the source's thread) and applications (on the
// trainer's) and is not thread-safe itself: KafkaSource guards it with its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <deque>

#include "trib/stream/offset_ranges.h"

namespace trib::stream {

// Per partition, an offset (the next to read or to hand out).
using PartitionOffsets = std::map<std::int32_t, std::int64_t>;

struct PartitionProgress {
  std::int64_t next = 0;  // every offset below is done
  OffsetRanges applied;   // offsets above `next` that are done
  // The claim covers offsets from here on only: a partition handed over within a run, whose
  // earlier records the previous owner may still be applying. 0 for a partition restored or
  // first assigned. Only merging claims (merge_claims) reads it.
  std::int64_t from = 0;

  bool done(std::int64_t offset) const { return offset < next || applied.contains(offset); }
  bool operator==(const PartitionProgress&) const = default;
};

using PartitionProgressMap = std::map<std::int32_t, PartitionProgress>;

class AppliedOffsets {
 public:
  // Tracks `partition` from `start` (a restore, an assignment), forgetting what it held.
  void start(std::int32_t partition, PartitionProgress start);
  // The partition went to another member, whose claim starts where this source stopped
  // reading: this one keeps its claim only until what it handed out is applied.
  void release(std::int32_t partition, std::int64_t read_next);
  bool tracks(std::int32_t partition) const { return parts_.contains(partition); }
  // The job rolled back (a restore, an allreduce group's rollback): what was handed out and
  // not applied never will be, so the claims kept on partitions another member owns now are
  // void (the new owner starts at the rollback's progress). Owned partitions are untouched.
  void forget_released();
  // The partition this tracker released came back to it (no other member took it over): its
  // claim goes on as if it had never been released, pending records included. False when it
  // is not tracked as released (then start() it).
  bool reclaim(std::int32_t partition);

  // A record the source handed out: pending until applied().
  void handed_out(std::int32_t partition, std::int64_t offset);
  // A record consumed without training (poison): done at once.
  void consumed(std::int32_t partition, std::int64_t offset);
  // The update that used this record is applied (or its step was skipped on purpose).
  void applied(std::int32_t partition, std::int64_t offset);
  // Done before a restore: a re-read must not hand it out again.
  bool skip(std::int32_t partition, std::int64_t offset) const;

  // Per tracked partition its progress; `read_next` gives, per owned partition, the offset
  // after the last record the source read (handed out or skipped). Drops the applied offsets
  // below the low watermark, and released partitions with nothing pending.
  PartitionProgressMap progress(const PartitionOffsets& read_next);
  // Records handed out and not applied, over all partitions.
  std::int64_t pending() const;

 private:
  // Records come out of a partition in offset order, so the records handed out form an
  // ascending queue; the applied ones at its front are below the low watermark and leave it.
  // Per record that is a push, a binary search and a flag: no allocation per record.
  struct Part {
    PartitionProgress base;         // the start, plus poison records; next only moves forward
    std::deque<std::int64_t> out;   // handed out, ascending; the front is not applied
    std::deque<char> done;          // per entry of `out`: applied
    std::int64_t undone = 0;        // entries of `out` not applied
    bool released = false;
    std::int64_t released_at = 0;   // the source's read position when it was released
  };
  static PartitionProgress progress_of(Part& part, std::int64_t read_next);

  std::map<std::int32_t, Part> parts_;
};

// Claims of several workers merged: partitions are usually disjoint; one claimed twice (it
// moved within a run) gets the union of what both say is done, from the earlier `from`.
PartitionProgress merge_claims(const PartitionProgress& a, const PartitionProgress& b);

}  // namespace trib::stream
