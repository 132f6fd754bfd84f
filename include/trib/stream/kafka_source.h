// A Kafka topic as an ExampleSource: this worker's share of the topic's partitions (as a member
// of a consumer group), decoded against a schema, in batches the pipeline can shuffle, batch
// and prefetch like any other source:
//
//   auto source = std::make_unique<stream::KafkaSource>(options);
//   stream::KafkaSource* kafka = source.get();  // the pipeline owns it; keep a pointer
//   data::Pipeline p = data::Pipeline::from(std::move(source)).shuffle_buffer(4096, seed)
//                          .batch(256).prefetch(2).build();
//   if (restoring) kafka->seek(checkpoint_offsets);           // applied progress saved
//   ... train; after each update: kafka->applied(batch);
//   save a checkpoint holding kafka->applied_position(); once it is published:
//   kafka->commit(that position);                              // for lag monitoring
//
// Exactly-once: the trainer reports each batch applied() once its update is applied;
// applied_position() then holds, per partition, the low watermark of applied records and the
// applied offsets above it. seek() to it makes the source continue there (skipping what was
// applied), not from the group's committed offsets; commit() only publishes the low watermarks
// to the group. position() is the read position pipeline stages need. See docs/streaming.md
// for the guarantee and its limits.
//
// Batches carry, besides "features" (f32 [N, F]) and "labels" (i32 [N]), per-record metadata:
// kEventTime (i64, the Kafka timestamp in ms), kPartition (i32), kOffset (i64) and, when the
// schema has an id field, kEventId (i64).
//
// Records that do not fit the schema are counted and sent to the dead-letter topic; training
// goes on. But when each of the first `schema_check_records` records fails the same way (lacks
// the same field, say), next() throws InvalidArgument naming it before any of them is
// dead-lettered or consumed: the schema, not the data, is wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trib/data/example_source.h"
#include "trib/stream/kafka_config.h"
#include "trib/stream/schema.h"
#include "trib/stream/stream_position.h"

namespace trib::stream {

// A member's share of a topic's partitions when the job, not the consumer group, assigns them:
// member `index` of `members` reads every partition p with p % members == index, its home.
// Members in `absent` (bit m: member m left the job for good, a parameter-server worker) read
// nothing: each partition of theirs goes to the first present member of its own fixed order
// after its home (owner()), so a departure moves only the leaver's partitions, spread over the
// others, and a member coming back takes back exactly the partitions it would own.
struct PartitionShare {
  int index = 0;
  int members = 1;
  std::uint64_t absent = 0;

  bool is_absent(int member) const { return member < 64 && ((absent >> member) & 1u) != 0; }
  // The member that reads `partition`; -1 when every member is absent.
  int owner(std::int32_t partition) const {
    const int home = partition % members;
    if (!is_absent(home)) return home;
    // The others in a cyclic order whose start moves with the partition: a leaver's partitions
    // spread over them.
    const int others = members - 1;
    for (int j = 0; j < others; ++j) {
      const int m = (home + 1 + (partition / members + j) % others) % members;
      if (!is_absent(m)) return m;
    }
    return -1;
  }
  bool owns(std::int32_t partition) const { return owner(partition) == index; }
  bool operator==(const PartitionShare&) const = default;
};

struct KafkaSourceOptions {
  KafkaConfig kafka;
  std::string topic;
  std::string group_id;
  SchemaConfig schema;
  // Dead letters go to this topic ("<topic>.dlq" when empty), unless dead_letter is false.
  bool dead_letter = true;
  std::string dead_letter_topic;
  // Tags this source's offset commits. Workers of one job incarnation should share it (e.g. the
  // job's start time): a partition moving between them after a restore then continues from its
  // hand-over commit rather than from the restored checkpoint. Empty: a random one.
  std::string run_id;
  // Where a partition starts when neither a restored position nor the group has an offset.
  enum class StartAt { earliest, latest } start_at = StartAt::earliest;
  // Records are handed out in event-time order so that a re-read reproduces the sequence (see
  // event_time_merge.h); an event may wait this long for slower partitions. 0: arrival order
  // without waiting (lowest latency; a shuffle buffer then no longer resumes exactly).
  std::chrono::milliseconds merge_grace{200};
  // When set, next() ends a pass (returns nullopt) after this long without a record; the next
  // call goes on. Unset: next() waits for records until interrupted.
  std::optional<std::chrono::milliseconds> idle_end;
  // Fetching from a partition pauses while this many of its records wait to be handed out.
  std::int64_t max_buffered_per_partition = 10'000;
  // Fail fast on a wrong schema (see above); 0 disables the check.
  std::int64_t schema_check_records = 20;
  // The caller reports every batch it trains on with applied() (which needs this). Then
  // applied_position() counts only applied records, and the hand-over commit of a closing
  // source holds the applied low watermark, not the read position: records it handed out but
  // nobody applied are read again by the group's next member. Without it, applied_position()
  // is the read position.
  bool reports_applied = false;
  // The constructor waits this long for the group's first assignment (see KafkaSource()).
  std::chrono::milliseconds join_timeout{60'000};
  // Unset: the consumer group assigns partitions (subscribe; rebalances move them between
  // members, with hand-over commits). Set: this source reads exactly this share (librdkafka's
  // manual assignment: no group membership, no session to time out, no rebalances), and the
  // job changes it with reassign(); group_id then only names the commits. The share must not
  // be empty: index < the topic's partition count.
  std::optional<PartitionShare> share;
};

struct PartitionLag {
  std::int32_t partition = 0;
  std::int64_t next_offset = 0;     // of the next record this source hands out
  std::int64_t high_watermark = -1;  // offset after the partition's last record; -1 unknown
  std::int64_t lag = -1;             // high_watermark - next_offset; -1 unknown
};

struct KafkaSourceStats {
  std::int64_t records = 0;          // handed out in batches
  std::int64_t bytes = 0;            // their value bytes
  std::int64_t poison = 0;           // records that did not fit the schema (dead-lettered)
  std::int64_t unapplied = 0;        // handed out, not yet reported applied()
  std::int64_t dead_lettered = 0;    // of those, delivered to the dead-letter topic
  std::int64_t dead_letter_failures = 0;
  std::int64_t assignments = 0;      // rebalances (or reassignments) that gave this source partitions
  std::int64_t revocations = 0;
  std::int64_t handoff_failures = 0;  // hand-over commits the group refused
  std::string last_error;
};

class KafkaSource final : public data::ExampleSource {
 public:
  // Field names of the per-record metadata in each batch.
  static constexpr std::string_view kEventTime = "event_time_ms";
  static constexpr std::string_view kPartition = "kafka_partition";
  static constexpr std::string_view kOffset = "kafka_offset";
  static constexpr std::string_view kEventId = "event_id";

  // Validates the options (InvalidArgument), reaches the cluster within
  // options.kafka.connect_timeout (Unavailable naming the address), checks that the topic
  // exists (NotFound naming it), joins the group and waits for its first assignment (possibly
  // empty), so that position() names real offsets from the start: Unavailable after
  // join_timeout. Partitions moved to it later arrive during next().
  explicit KafkaSource(KafkaSourceOptions options);
  // Leaves the group; partitions it owned are committed at their position, so the members
  // that take them over continue there.
  ~KafkaSource() override;
  KafkaSource(const KafkaSource&) = delete;
  KafkaSource& operator=(const KafkaSource&) = delete;

  std::optional<data::Batch> next(std::int64_t max_rows) override;
  // Where reading stands: per owned partition the offset after the last record handed out
  // (what a pipeline stage re-reading a window seeks back to).
  data::DataPosition position() const override;
  // Where training stands, for checkpoints and commits: per partition the records applied
  // (applied_offsets.h: the low watermark, and the applied offsets above it). Records handed
  // out but not applied (in a shuffle buffer, a prefetch queue) are not in it: a source that
  // seeks to it reads them again, and skips the applied ones.
  data::DataPosition applied_position() const;
  // applied_position() as it will be once `batch` (one this source handed out) is applied: the
  // cursor a worker sends with that batch's update, so that whoever keeps the update (a
  // parameter server, the allreduce group) knows where this worker's data stands with it.
  data::DataPosition applied_position_after(const data::Batch& batch) const;
  // Thread-safe: the update that used `batch` (one this source produced, any pipeline stages
  // later) is applied. Call it for a step skipped on purpose too (a non-finite gradient).
  // InvalidArgument unless options.reports_applied.
  void applied(const data::Batch& batch);
  // Continues owned partitions from the position's offsets at once, and partitions assigned
  // later from theirs; with applied progress (applied_position()), records it holds as
  // applied are skipped. InvalidArgument for a position of another topic.
  void seek(const data::DataPosition& position) override;
  void interrupt() override;
  // The job rolled back in place (a lost parameter server restored from a checkpoint): once
  // the pipeline over this source is torn down (nothing inside next()), clears its interrupt,
  // seeks to `position` and tags later commits with `run_id` (a partition moved between
  // members after the rewind must not continue from a commit made before it). The consumer
  // stays in its group: no rebalance. Claims on partitions revoked before the rewind are
  // dropped: they cover records of the discarded pass (applied or never to be).
  void rewind(const data::DataPosition& position, const std::string& run_id);
  // Job-assigned sources (options.share): this member's share changes (the job's group
  // re-formed). Call it like rewind(), with nothing inside next(), after the rewind: the
  // partitions it gains start at the rewound position (else as in the constructor), and those
  // it gives up are dropped without a commit (their next owner starts at the same position).
  // InvalidArgument for a group-assigned source or an empty share.
  void reassign(PartitionShare share);

  // Takes what the broker has delivered, waiting up to `wait`, and hands nothing out: this
  // serves rebalances (librdkafka runs them inside a poll) for a caller that must wait for
  // something else before its first next(). Call it from the thread that calls next().
  void service(std::chrono::milliseconds wait);

  // The calls below are thread-safe: a trainer calls them while the pipeline's prefetch
  // thread is inside next().

  // Commits the position's offsets of the partitions this source owns now (the others belong
  // to other members). Call it once the checkpoint holding `position` is published. Returns
  // "" or the error (the checkpoint, not the commit, is what a restart trusts).
  std::string commit(const data::DataPosition& position);
  std::vector<PartitionLag> lag() const;
  KafkaSourceStats stats() const;
  std::vector<std::int32_t> assignment() const;
  const KafkaSourceOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trib::stream
