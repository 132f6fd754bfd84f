// What a stream job adds to the training loop: prequential metrics (each batch scored before
// it is trained on) with counts that continue across --resume, every worker's metrics rows in
// the chief's metrics.jsonl (MetricsRelay) and a closing summary line, the debug record of
// applied event ids (data.kafka.record_ids), and checkpoints holding the workers' agreed
// applied progress and counts (the "kafka" section), committed to the consumer group only once
// the checkpoint is published (stream_sync.h).
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "stream/metrics_relay.h"
#include "train_stream/kafka_batch_source.h"
#include "train_stream/stream_gauges.h"
#include "trib/stream/prequential_metrics.h"
#include "train/training_hooks.h"

namespace trib::train_stream {

// Appends "step id id ..." per applied step to <run>/stream_ids/worker-<index>.txt, each line
// written whole and flushed so that a killed run leaves complete lines. An allreduce group
// that shares cursors writes the line as the step's exchange begins (its events are kept if
// the others apply the step, even when this worker dies in it), and a "rewind" line retracts
// it when the step is not applied.
class IdRecorder {
 public:
  IdRecorder(const std::filesystem::path& run_dir, int worker, bool enabled);
  void step(std::int64_t step, const data::Batch& batch);
  // "rewind <step>": the job rolled back to `step`; the lines above it for later steps were
  // applied to a model the restore discarded (they are applied again below, or not at all).
  void rewind(std::int64_t step);

 private:
  std::ofstream out_;
};

class StreamHooks final : public train::TrainingHooks {
 public:
  // `metrics`: this process's registry (monitoring.port), or null. `checkpoint_every`: the
  // loop's checkpoint interval in steps (LoopPlan).
  StreamHooks(KafkaBatchSource& source, const std::filesystem::path& run_dir, bool record_ids,
              std::int64_t checkpoint_every, monitor::MetricsRegistry* metrics = nullptr);

  void on_start(train::LoopContext& ctx) override;
  void on_step(train::LoopContext& ctx, const data::Batch& batch, const train::StepResult& result) override;
  // Allreduce with data.kafka.share_cursors: writes the step's id line (see IdRecorder).
  void before_step(train::LoopContext& ctx, const data::Batch& batch) override;
  void on_skip(train::LoopContext& ctx, const data::Batch& batch) override;
  void on_report(train::LoopContext& ctx) override;
  void on_last_step(train::LoopContext& ctx) override;
  // The job rolled back in place: the Kafka positions go back to the checkpoint's (in the
  // restore's sections), inside this process, and so do the counts.
  void on_rewind(train::LoopContext& ctx, const update::Rewind& rewind) override;
  // Allreduce, a lost worker. With the members' cursors of the step the group rolled back to
  // (Rollback::group_cursors, data.kafka.share_cursors): every survivor rewinds its Kafka
  // positions to their merged progress there, the lost worker's partitions shared among the
  // survivors, and the counts go back with them; the group goes on from that step. Without
  // (not shared, not known yet, or a worker joining): the survivors' group takes the chief's
  // newest checkpoint (variables and optimizer state through the group, no shared filesystem)
  // and every survivor rewinds its Kafka positions to the checkpoint's, for every partition it
  // owns or is given later. Returns the step the group goes on from.
  std::optional<std::int64_t> on_regroup(train::LoopContext& ctx, const update::Rollback& rollback) override;
  void on_checkpoint(train::LoopContext& ctx, bool final) override;
  void on_end(train::LoopContext& ctx) override;

 private:
  // This worker's claim for a checkpoint: applied progress per partition, and its counts.
  data::DataPosition claim(const train::LoopContext& ctx);
  // Chief: writes a checkpoint holding `offsets`; commits them to Kafka once it is published.
  // Returns whether it was written.
  // `final`: the run's last checkpoint, written even where a periodic one of its step exists.
  bool checkpoint_and_commit(train::LoopContext& ctx, const data::DataPosition& offsets, bool final = false);
  // A restore announced after this worker's last step: its updates since the checkpoint are
  // gone and it takes no more steps, so its claim becomes the checkpoint's progress (the
  // events after it are read by the next --resume). Returns that claim.
  data::DataPosition adopt_after_end(train::LoopContext& ctx, const AnnouncedRestore& restore);
  // The positions a restore goes back to: its checkpoint's "kafka" section, or where this run
  // started when it has none. Counts and the id record go back with them.
  data::DataPosition rewind_to(train::LoopContext& ctx, const std::string& sections, std::int64_t step);
  // A restored checkpoint's Kafka progress (from its manifest `sections`), or, with none, where
  // this run started.
  data::DataPosition restored_from(const std::string& sections) const;
  // on_regroup of a relaunched chief that joined after the run's last step: the members'
  // cursors of it become the last checkpoint's progress and counts (end_of_run_), nothing
  // rewinds. Returns rollback.step.
  std::int64_t take_end_of_run(train::LoopContext& ctx, const update::Rollback& rollback);
  // Not the chief, the chief lost after the run's last exchange: hands its relaunched process
  // the final state (UpdateStrategy::hand_over_after_end); Unavailable when none came.
  void hand_over_end(train::LoopContext& ctx);
  // on_regroup with the members' cursors: returns rollback.step.
  std::int64_t regroup_from_cursors(train::LoopContext& ctx, const update::Rollback& rollback);
  // Every member of allreduce group `generation` rewinds to `position` and waits for the others
  // before reading; with `say_lost`, a line when one was lost meanwhile.
  void rewind_group(train::LoopContext& ctx, const data::DataPosition& position, std::int64_t generation,
                    bool say_lost);
  // Counts and the id record back to `position` (its counts fields) at `step`.
  void take_back(train::LoopContext& ctx, const data::DataPosition& position, std::int64_t step);
  // Chief, at the end: worker `w`'s cursor of the run's last step, as the group shared it in
  // that step's exchange (allreduce, data.kafka.share_cursors); nullopt where none is kept.
  std::optional<data::DataPosition> last_step_cursor(const train::LoopContext& ctx, int w) const;
  // Chief, at the end: the other workers' last rows and the summary line of `merged`'s counts.
  void summarize(train::LoopContext& ctx, const data::DataPosition& merged);
  // A relaunched parameter-server worker (job-assigned partitions; the chief too): its counts
  // continue from its resumed cursor's, and it takes the checkpoint barrier of the step it
  // resumes at, which it missed.
  void rejoin(train::LoopContext& ctx);
  // Parameter servers, job-assigned partitions: at a step boundary (every kDepartureCheck at
  // most), the partitions of workers that left for good since move to the present workers, this
  // one reading its part of them from the departed claim on (KafkaBatchSource::adopt). The
  // chief first publishes the departure of a worker the launcher gave up on (settle).
  void adopt_departed(train::LoopContext& ctx);
  // Chief: worker `w`, which the launcher gave up on, departs with the cursor of its last push
  // the servers applied (the slowest server's), or where its partitions were last sought.
  void settle(train::LoopContext& ctx, int w);
  // This worker leaves the running job for good (ctx.leaving): its claim goes to the others.
  void leave(train::LoopContext& ctx);
  // Started again at the index of a worker that left for good: its counts are those it left
  // with, and (async) it takes its share back from the workers that adopted it, reading from
  // the step the chief admits it at; else, or when the job ends first, it reads nothing
  // (KafkaBatchSource::left_before). stream_departures.cc.
  void rejoin_after_leaving(train::LoopContext& ctx);
  // At a step boundary: what this worker reads of each worker that came back goes back to it
  // (KafkaBatchSource::hand_back), once per return.
  void hand_back_returned(train::LoopContext& ctx);

  KafkaBatchSource& source_;
  std::filesystem::path run_dir_;
  bool record_ids_;
  bool shares_cursors_ = false;  // allreduce with data.kafka.share_cursors (from on_start)
  std::int64_t checkpoint_every_;
  stream::PrequentialMetrics metrics_;
  std::optional<IdRecorder> ids_;  // from on_start: the run directory exists by then
  std::optional<stream::MetricsRelay> relay_;  // from on_start
  std::optional<StreamGauges> gauges_;         // monitoring on
  // Chief, after an allreduce group rolled back to a checkpoint: its Kafka progress, under
  // every later claim of the chief, so that a partition nobody has claimed since (the lost
  // worker's, before the consumer group moves it) keeps the checkpoint's progress.
  data::DataPosition regrouped_from_;
  // A relaunched chief that took the final state (take_end_of_run): every member's final
  // progress and counts, the last checkpoint's; empty otherwise.
  data::DataPosition end_of_run_;
  // Parameter-server stream jobs on job-assigned partitions with several workers: departures
  // are looked for (adopt_departed), at most this often.
  bool adopts_ = false;
  std::chrono::steady_clock::time_point next_departure_check_{};
  std::map<int, int> handed_back_;  // worker: the return whose hand-over this worker published
  std::int64_t handoff_failures_said_ = 0;  // refused hand-over commits already warned of
};

}  // namespace trib::train_stream
