#include "train_stream/kafka_batch_source.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "train/training_state.h"
#include "trib/core/error.h"
#include "trib/stream/stream_position.h"

namespace trib::train_stream {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

stream::KafkaSourceOptions source_options(const config::JobConfig& job, const train::Distribution& dist,
                                          const std::string& run_id) {
  const config::KafkaDataConfig& k = job.data.kafka;
  const config::SchemaDataConfig& s = job.data.schema;
  stream::KafkaSourceOptions o;
  o.kafka.bootstrap_servers = k.bootstrap_servers;
  o.kafka.properties = k.properties;
  o.kafka.connect_timeout = std::chrono::seconds(k.connect_timeout_s);
  o.topic = k.topic;
  o.group_id = k.group_id.empty() ? "trib-" + job.name : k.group_id;
  o.schema.format = stream::parse_record_format(s.format);
  o.schema.features = s.features;
  o.schema.label = s.label;
  o.schema.id_field = s.id_field;
  o.schema.csv_columns = s.csv_columns;
  o.schema.num_classes = static_cast<int>(job.model.classes);
  o.run_id = run_id;
  if (job_assigns_partitions(job)) o.share = share_of(dist.worker_index, {}, dist.workers);
  o.reports_applied = true;  // the loop reports each batch once its update is applied
  if (k.idle_timeout_s > 0) o.idle_end = std::chrono::milliseconds(static_cast<std::int64_t>(k.idle_timeout_s * 1000));
  return o;
}

// sign(x) * log(1 + |x|) on the schema's log1p columns: amounts and distances span decades.
data::BatchTransform log1p_columns(const config::SchemaDataConfig& s) {
  std::vector<std::size_t> cols;
  for (const std::string& name : s.log1p)
    cols.push_back(static_cast<std::size_t>(std::find(s.features.begin(), s.features.end(), name) - s.features.begin()));
  const std::size_t width = s.features.size();
  return [cols, width](data::Batch b) {
    Tensor f = b.features().clone();
    float* x = f.data<float>();
    for (std::int64_t r = 0; r < f.shape()[0]; ++r)
      for (std::size_t c : cols) {
        float& v = x[static_cast<std::size_t>(r) * width + c];
        v = std::copysign(std::log1p(std::fabs(v)), v);
      }
    b.set(data::Batch::kFeatures, std::move(f));
    return b;
  };
}

// The pipeline's view of the source KafkaBatchSource keeps: tearing a pipeline down (a
// rewind) must not close the consumer, which would leave the group and move partitions.
class BorrowedKafka final : public data::ExampleSource {
 public:
  explicit BorrowedKafka(stream::KafkaSource& kafka) : kafka_(kafka) {}
  std::optional<data::Batch> next(std::int64_t max_rows) override { return kafka_.next(max_rows); }
  data::DataPosition position() const override { return kafka_.position(); }
  void seek(const data::DataPosition& position) override { kafka_.seek(position); }
  void interrupt() override { kafka_.interrupt(); }

 private:
  stream::KafkaSource& kafka_;
};

}  // namespace

bool job_assigns_partitions(const config::JobConfig& job) {
  const std::string& a = job.data.kafka.assignment;
  // auto: the job's under allreduce (its groups re-form) and parameter servers (a lost worker's
  // share waits for its relaunch, at its last applied push); one process reads them all.
  return a == "job" || (a == "auto" && (job.strategy.name == config::StrategyName::allreduce ||
                                        job.strategy.name == config::StrategyName::ps));
}

stream::PartitionShare share_of(int worker, const std::vector<int>& members, int workers) {
  if (members.empty()) return {.index = worker, .members = workers};
  const auto at = std::find(members.begin(), members.end(), worker);
  TRIB_CHECK(at != members.end(), InvalidArgument, "worker {} is not a member of its group ({})", worker,
             fmt::join(members, ", "));
  return {.index = static_cast<int>(at - members.begin()), .members = static_cast<int>(members.size())};
}

KafkaBatchSource::KafkaBatchSource(const config::JobConfig& job, const train::Distribution& dist)
    : job_(job), dist_(dist), sync_(dist) {}

void KafkaBatchSource::start(const train::SourceStart& start) {
  const config::KafkaDataConfig& kc = job_.data.kafka;
  // Where to start: the checkpoint's applied progress per partition (the chief's, handed to
  // every worker, whichever partitions it gets), never the group's commits. The pipeline's
  // own position is not restored: the source skips what the checkpoint holds as applied, and
  // reads again what was in the shuffle buffer (docs/streaming.md).
  if (dist_.chief()) {
    start_.run_id = fmt::format("{}-{}", wall_ms(), std::random_device{}());
    if (start.checkpoint != nullptr) {
      const Manifest& m = start.checkpoint->manifest();
      if (m.sections.count("kafka")) start_.offsets = train::data_position_from_json(m.sections.at("kafka"));
    }
  }
  start_ = sync_.start(start_);

  stream::KafkaSourceOptions options = source_options(job_, dist_, start_.run_id);
  // Relaunched into a job that workers left for good: their partitions are the others' (this
  // one's own too, if it is one of them: left_before).
  if (options.share && sync_.relaunched() && job_.strategy.name == config::StrategyName::ps)
    for (int w = 0; w < dist_.workers && w < 64; ++w)
      if (std::optional<data::DataPosition> claim = sync_.departed(w)) {
        absent_ |= std::uint64_t{1} << w;
        gone_.emplace(w, std::move(*claim));
      }
  left_before_ = ((absent_ >> dist_.worker_index) & 1u) != 0;
  // Relaunched after it took its share back: what it pushed nothing of since starts there.
  if (options.share && sync_.relaunched() && job_.strategy.name == config::StrategyName::ps)
    if (std::optional<data::DataPosition> back = sync_.taken_back(dist_.worker_index))
      gone_.emplace(dist_.worker_index, std::move(*back));
  if (options.share) options.share->absent = absent_;
  kafka_ = std::make_unique<stream::KafkaSource>(options);
  stream::KafkaSource* kafka = kafka_.get();
  if (!start_.offsets.fields().empty()) kafka->seek(start_.offsets);
  base_ = stream::progress_fields(start_.offsets);
  tag_ = start_.run_id;
  sync_.await_assignment([kafka] { return !kafka->assignment().empty(); },
                         [kafka] { kafka->service(std::chrono::milliseconds(10)); }, std::chrono::seconds(60),
                         kc.topic);
  build_pipeline();
}

void KafkaBatchSource::build_pipeline() {
  const config::KafkaDataConfig& kc = job_.data.kafka;
  const config::TrainingConfig& tc = job_.training;
  data::PipelineBuilder builder = data::Pipeline::from(std::make_unique<BorrowedKafka>(*kafka_));
  if (job_.data.shuffle && kc.shuffle_buffer > 0)
    builder.shuffle_buffer(kc.shuffle_buffer, tc.seed + static_cast<std::uint64_t>(dist_.worker_index));
  if (!job_.data.schema.log1p.empty()) builder.map(log1p_columns(job_.data.schema));
  // Not drop_last: the last events of an idle stream are trained too, in a short batch.
  pipeline_.emplace(builder.batch(tc.batch, /*drop_last=*/false).prefetch(job_.data.prefetch).build());
}

void KafkaBatchSource::rewind(const data::DataPosition& offsets, std::int64_t generation,
                              const std::function<void()>& before_reading) {
  pipeline_.reset();  // joins the prefetch thread: nothing is inside the source's next() now
  // Without a checkpoint: where this run started. Commits after the rewind carry a tag of
  // their own (KafkaSource::rewind).
  const data::DataPosition& to = offsets.fields().empty() ? start_.offsets : offsets;
  base_ = stream::progress_fields(to);
  tag_ = fmt::format("{}-g{}", start_.run_id, generation);
  kafka_->rewind(to, tag_);
  // The job's group changed (an allreduce regroup): partitions move among the members here,
  // every one of which has just rewound to the same position.
  if (kafka_->options().share) kafka_->reassign(share());
  sync_.set_scope(generation);
  if (before_reading) before_reading();
  build_pipeline();
}

std::optional<data::DataPosition> KafkaBatchSource::position_after(const data::Batch& batch) const {
  data::DataPosition at = kafka_->applied_position_after(batch);
  for (const auto& [key, value] : held_.fields()) at.set(key, value);
  if (cursor_counts_) stream::save_counts(at, dist_.worker_index, cursor_counts_(batch));
  return at;
}

void KafkaBatchSource::resume_at(const data::DataPosition& position) {
  if (!kafka_->options().share) return;
  // The progress this run started from, for the partitions the cursor does not name; where
  // both do, the cursor's (it grew from there: merge_claims keeps what either applied).
  data::DataPosition at = stream::progress_fields(start_.offsets);
  // Partitions adopted from a worker that left: from its departure on, where this worker may
  // not have pushed anything of theirs yet.
  for (const auto& [w, claim] : gone_) stream::merge_claims(at, stream::progress_fields(claim));
  stream::merge_claims(at, stream::progress_fields(position));
  pipeline_.reset();  // joins the prefetch thread: nothing is inside the source's next() now
  kafka_->rewind(at, start_.run_id);
  base_ = at;
  tag_ = start_.run_id;
  build_pipeline();
  resumed_at_ = kafka_fields(position);
}

stream::PartitionShare KafkaBatchSource::share() const {
  stream::PartitionShare s = share_of(dist_.worker_index, sync_.members(), dist_.workers);
  s.absent = absent_;
  return s;
}

std::vector<std::int32_t> KafkaBatchSource::reshare(const std::vector<data::DataPosition>& claims,
                                                    std::uint64_t set_absent, std::uint64_t clear_absent) {
  // Own partitions go back to what this worker applied (the shuffle buffer's and the prefetch
  // queue's records are read again); others' start at the furthest claim of them, or, where
  // there is none, where the consumer last sought.
  data::DataPosition at = base_;
  stream::merge_claims(at, stream::progress_fields(kafka_->applied_position()));
  for (const data::DataPosition& claim : claims) stream::merge_claims(at, stream::progress_fields(claim));
  absent_ = (absent_ | set_absent) & ~clear_absent;
  const std::vector<std::int32_t> before = kafka_->assignment();
  pipeline_.reset();  // joins the prefetch thread: nothing is inside the source's next() now
  kafka_->rewind(at, tag_);
  kafka_->reassign(share());
  base_ = at;
  build_pipeline();
  return before;
}

namespace {
// The partitions of `a` that `b` lacks.
std::vector<std::int32_t> minus(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  std::vector<std::int32_t> out;
  for (std::int32_t p : a)
    if (std::find(b.begin(), b.end(), p) == b.end()) out.push_back(p);
  return out;
}
std::uint64_t bit(int w) { return w < 64 ? std::uint64_t{1} << w : 0; }
}  // namespace

std::vector<std::int32_t> KafkaBatchSource::adopt(const std::map<int, data::DataPosition>& gone) {
  std::vector<data::DataPosition> claims;
  std::uint64_t absent = 0;
  for (const auto& [w, claim] : gone) {
    claims.push_back(claim);
    absent |= bit(w);
  }
  const std::vector<std::int32_t> before = reshare(claims, absent, 0);
  return minus(kafka_->assignment(), before);
}

std::pair<std::vector<std::int32_t>, data::DataPosition> KafkaBatchSource::hand_back(int w) {
  gone_.erase(w);  // a relaunch resumes its share without it from here on
  const std::string& topic = job_.data.kafka.topic;
  // The progress `from` holds of the partitions `keep` says.
  auto progress_of = [&topic](const data::DataPosition& from, const auto& keep) {
    stream::PartitionProgressMap kept;
    for (auto& [p, progress] : stream::progress_in(from, topic))
      if (keep(p)) kept.emplace(p, progress);
    data::DataPosition out;
    stream::set_progress(out, topic, kept);
    return out;
  };
  if ((absent_ & bit(w)) == 0) {
    // Relaunched since it adopted `w`'s partitions (its share now leaves them out): what its
    // lost process applied of them is in its resumed cursor, and goes back with the hand-over.
    const std::vector<std::int32_t> reads = kafka_->assignment();
    const auto not_read = [&](std::int32_t p) { return std::find(reads.begin(), reads.end(), p) == reads.end(); };
    return {{}, progress_of(resumed_at_, not_read)};
  }
  const std::vector<std::int32_t> before = reshare({}, 0, bit(w));
  const std::vector<std::int32_t> given = minus(before, kafka_->assignment());
  // base_ is now this worker's applied progress of every partition it read (reshare).
  const auto is_given = [&](std::int32_t p) { return std::find(given.begin(), given.end(), p) != given.end(); };
  return {given, progress_of(base_, is_given)};
}

std::vector<std::int32_t> KafkaBatchSource::take_back(const std::vector<data::DataPosition>& claims) {
  // Its own departure's claim and those of the workers still gone (gone_, from start()): their
  // partitions nobody adopted yet start there; the hand-overs hold the adopted ones' progress.
  std::vector<data::DataPosition> all = claims;
  for (const auto& [w, claim] : gone_) all.push_back(claim);
  gone_.erase(dist_.worker_index);
  left_before_ = false;
  reshare(all, 0, bit(dist_.worker_index));
  return kafka_->assignment();
}

void KafkaBatchSource::applied(const data::Batch& batch) { kafka_->applied(batch); }

// Consumed on purpose: a restore does not read it again (the stream hooks count it skipped).
void KafkaBatchSource::skipped(const data::Batch& batch) { kafka_->applied(batch); }

}  // namespace trib::train_stream
