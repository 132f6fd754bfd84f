// KafkaSource's state, shared by kafka_source.cc (reading) and kafka_source_offsets.cc
// (rebalances, seek and commit).
//
// Threads: next(), position() and seek() run on the pipeline's thread, which also runs the
// rebalance callbacks (librdkafka calls them inside poll). commit(), lag(), stats() and
// interrupt() may run on any thread. `mu` guards the merge and everything else mutable;
// `commit_mu` keeps a trainer's commit from interleaving with a hand-over commit, which could
// otherwise move a partition's committed offset backwards after another member took it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "stream/dead_letter_queue.h"
#include "stream/event_time_merge.h"
#include "stream/kafka_consumer.h"
#include "stream/schema_check.h"
#include "trib/stream/applied_offsets.h"
#include "trib/stream/kafka_source.h"
#include "stream/record_decoder.h"

namespace trib::stream {

struct KafkaSource::Impl final : detail::RebalanceHandler {
  explicit Impl(KafkaSourceOptions opts);
  ~Impl() override;

  PartitionOffsets on_assign(const std::vector<std::int32_t>& partitions) override;
  void on_revoke(const std::vector<std::int32_t>& partitions, bool lost) override;

  // A poison record waiting for the schema check to decide (schema_check.h).
  struct Held {
    detail::PendingRecord record;
    DecodeError error;
    std::string key, value;
  };

  // Decodes fetched messages into the merge (poison ones also to the dead-letter topic, once
  // the schema check has decided; records applied before a restore are skipped undecoded).
  void ingest(std::vector<detail::MessageHandle>& messages, std::int64_t now_ms);
  // Dead-letters a poison record and counts it; under no lock.
  void dead_letter(const detail::PendingRecord& r, std::string_view key, std::string_view value,
                   const DecodeError& error);
  // Under mu: a record into the merge (a poison one also done for the tracker).
  void push(detail::PendingRecord record, std::int64_t now_ms);
  // Under mu: forgets held records of `partition` (it was reset or revoked; they are re-read).
  void drop_held(std::int32_t partition);
  // Throws for a consumer error training cannot go on after (topic gone, not authorised).
  void check_consumer_error(const rd_kafka_message_t& message) const;
  // Under mu: pauses fetching partitions with too much buffered, resumes drained ones, and
  // gives the merge the latest high watermarks.
  void tend_partitions(std::int64_t now_ms);
  data::Batch assemble(std::vector<detail::PendingRecord>& records);

  KafkaSourceOptions options;
  std::string commit_tag;  // metadata of every commit: "trib run=<run_id>"
  RecordDecoder decoder;
  detail::SchemaCheck schema_check;
  std::unique_ptr<detail::DeadLetterQueue> dead_letters;
  std::atomic<bool> interrupted{false};

  mutable std::mutex mu;
  detail::EventTimeMerge merge;
  PartitionProgressMap restored;  // from seek(): where partitions assigned later start
  AppliedOffsets applied;         // what the trainer applied, per partition (applied_offsets.h)
  std::vector<Held> held;         // poison records while the schema check decides
  bool closing = false;           // leaving the group, applied() in use: hand-overs commit applied offsets
  PartitionOffsets assigned_at;  // where each owned partition started when it was assigned
  std::set<std::int32_t> paused;
  bool joined = false;  // the group's first assignment (possibly empty) has arrived
  KafkaSourceStats stats;  // all but the dead-letter counts, which the producer keeps

  std::mutex commit_mu;
  // Last: destroyed first, leaving the group while the members above still exist.
  std::unique_ptr<detail::KafkaConsumer> consumer;
};

std::int64_t wall_clock_ms();
// InvalidArgument unless `share` names a member, and one with partitions to read.
void check_share(const PartitionShare& share, int partition_count, const std::string& topic);
// The partitions of a topic with `partition_count` partitions that `share` reads, ascending.
std::vector<std::int32_t> partitions_of(const PartitionShare& share, int partition_count);

}  // namespace trib::stream
