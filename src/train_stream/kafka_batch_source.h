// The batch source of a stream job: events from a KafkaSource, through a shuffle buffer
// (data.kafka.shuffle_buffer, when data.shuffle is on) and the schema's log1p columns, in
// batches of training.batch. start() agrees with the other workers on where to begin (the
// chief's checkpoint, never the group's commits; see stream_sync.h) and waits until every
// worker owns partitions. next() gives nothing once the stream has been idle for
// data.kafka.idle_timeout_s; the batch before that may be short. Progress is what the loop
// reports applied (KafkaSource::applied_position), not what was read: records in the shuffle
// buffer or the prefetch queue are read again after a restore, in place (rewind) or not.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train_stream/stream_sync.h"
#include "trib/config/job_config.h"
#include "trib/data/pipeline.h"
#include "trib/stream/kafka_source.h"
#include "trib/stream/stream_counts.h"
#include "trib/train/batch_source.h"

namespace trib::train_stream {

// Whether the job, not Kafka's consumer group, assigns the partitions (data.kafka.assignment).
bool job_assigns_partitions(const config::JobConfig& job);
// Worker `worker`'s share of the partitions in a group of `members` (indices, in rank order;
// empty: all `workers` of the job).
stream::PartitionShare share_of(int worker, const std::vector<int>& members, int workers);

class KafkaBatchSource final : public train::BatchSource {
 public:
  // `job` and `dist` must outlive the source.
  KafkaBatchSource(const config::JobConfig& job, const train::Distribution& dist);

  void start(const train::SourceStart& start) override;
  std::optional<data::Batch> next() override {
    if (left_before_) return std::nullopt;
    return pipeline_->next();
  }
  void applied(const data::Batch& batch) override;
  void skipped(const data::Batch& batch) override;
  // position() stays nullopt: the stream hooks save the workers' merged applied progress as
  // the checkpoint's "kafka" section instead (stream_hooks.h).
  // The applied progress with `batch` in it, sent with its update (a parameter server keeps
  // each worker's last; the allreduce group each member's), and this worker's counts with
  // `batch` trained (set_cursor_counts), so that a worker relaunched there continues both.
  std::optional<data::DataPosition> position_after(const data::Batch& batch) const override;
  // What position_after() adds as this worker's counts (StreamHooks: its prequential counts).
  void set_cursor_counts(std::function<stream::StreamCounts(const data::Batch&)> counts) {
    cursor_counts_ = std::move(counts);
  }
  // Other workers' counts fields that position_after() carries too (none: empty): the lowest
  // member of an allreduce group whose lost chief is away holds the chief's, until the chief
  // joins again and takes them back from the join's cursors (StreamHooks::regroup_from_cursors).
  void hold_in_cursors(data::DataPosition counts) { held_ = std::move(counts); }
  // A relaunched parameter-server worker, before its first step: its share of the partitions
  // (fixed by its index: job-assigned) continues at `position`, the cursor of its last push
  // the servers applied (UpdateStrategy::resume_data_cursor), over the progress this run
  // started from (its partitions nobody read since). The pipeline start() built (it may have
  // prefetched) is torn down and built again over the seek. A group-assigned source ignores
  // it: the group may have moved those partitions to another worker since that push.
  void resume_at(const data::DataPosition& position) override;
  // The cursor resume_at() continued at (empty: none), its counts included.
  const data::DataPosition& resumed_at() const { return resumed_at_; }

  // The job rolled back in place to a checkpoint whose "kafka" section is `offsets` (empty:
  // none, back to where this run started), in restore `generation`: the pipeline (shuffle
  // buffer, prefetch) is torn down, the consumer seeks there, keeping its group membership
  // and partitions (job-assigned: taking this worker's share among sync().members()), a new
  // pipeline is built over it, and the barriers move to the generation's scope.
  // `before_reading` (when set) runs after the seek and before the new pipeline reads: an
  // allreduce group's members wait there for each other (StreamHooks::on_regroup).
  void rewind(const data::DataPosition& offsets, std::int64_t generation,
              const std::function<void()>& before_reading = {});

  // Parameter servers, job-assigned: workers `gone` (index: its last applied claim) left the
  // job for good. At this step boundary the pipeline is torn down, the consumer seeks its own
  // partitions back to their applied progress and reassigns: each partition of a departed
  // worker goes to its next present worker (PartitionShare::owner), this one taking its own
  // at the departed claim's progress. Returns the partitions it gained.
  std::vector<std::int32_t> adopt(const std::map<int, data::DataPosition>& gone);
  // Workers that left for good, whose partitions the others read (bit w: worker w).
  std::uint64_t absent() const { return absent_; }
  // A worker started again at the index of one that left for good (`trib scale` up): it reads
  // nothing (next() ends at once) until it has taken its share back (take_back), or for good
  // where it cannot (not async; the job ended first), so that no event is read twice.
  bool left_before() const { return left_before_; }
  // Another worker's return: worker `w` (absent here) is back. At this step boundary the
  // pipeline is torn down, own partitions seek back to their applied progress, and those that
  // `w` owns again are given up. Returns them and this worker's applied progress of them (the
  // hand-over; none when it read nothing of `w`'s).
  std::pair<std::vector<std::int32_t>, data::DataPosition> hand_back(int w);
  // This worker, left_before(), with every hand-over (`claims`): its share (without the workers
  // still gone) starts at the furthest of its departure's claim, the other departures' and the
  // hand-overs, and it reads again. Returns the partitions it reads.
  std::vector<std::int32_t> take_back(const std::vector<data::DataPosition>& claims);

  // The checkpoint's "kafka" section this run restored (empty: none).
  const data::DataPosition& restored_offsets() const { return start_.offsets; }
  stream::KafkaSource& kafka() { return *kafka_; }
  StreamSync& sync() { return sync_; }

 private:
  void build_pipeline();
  // At a step boundary: the pipeline torn down, own partitions back to their applied progress
  // over `claims`, the absent workers' bits set (`set_absent`) and cleared (`clear_absent`),
  // then the share taken anew. Returns the partitions read before.
  std::vector<std::int32_t> reshare(const std::vector<data::DataPosition>& claims, std::uint64_t set_absent,
                                    std::uint64_t clear_absent);
  // This worker's share among sync().members(), without the workers that left for good.
  stream::PartitionShare share() const;

  const config::JobConfig& job_;
  const train::Distribution& dist_;
  StreamSync sync_;
  StreamStart start_;
  // Before the pipeline, which reads it through a borrowed handle: it outlives every pipeline
  // built over it (a rewind builds a new one).
  std::unique_ptr<stream::KafkaSource> kafka_;
  std::optional<data::Pipeline> pipeline_;
  std::function<stream::StreamCounts(const data::Batch&)> cursor_counts_;
  data::DataPosition held_;  // hold_in_cursors
  data::DataPosition resumed_at_;
  std::uint64_t absent_ = 0;
  std::map<int, data::DataPosition> gone_;  // a relaunched worker's: departures before its start
  bool left_before_ = false;
  // The position the consumer last sought to as a whole (the start, a rewind, a resume): the
  // progress of partitions nobody has applied from since.
  data::DataPosition base_;
  std::string tag_;  // the run id the consumer's commits carry since then
};

}  // namespace trib::train_stream
