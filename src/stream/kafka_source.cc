#include "trib/stream/kafka_source.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "stream/kafka_source_impl.h"
#include "trib/core/error.h"
#include "trib/stream/mock_broker.h"

namespace trib::stream {
namespace {

// Records buffered beyond 4 batches before next() stops taking messages from librdkafka, at
// the least.
constexpr std::int64_t kDrainSlack = 1024;
// Longest single wait for a message, so that interrupt() is noticed promptly.
constexpr int kPollSliceMs = 100;

std::string random_run_id() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

const KafkaSourceOptions& validated(const KafkaSourceOptions& o) {
  validate(o.kafka);
  TRIB_CHECK(is_valid_topic_name(o.topic), InvalidArgument,
             "Kafka source: topic '{}' is not a valid topic name ([a-zA-Z0-9._-], 1-249 characters)", o.topic);
  TRIB_CHECK(!o.group_id.empty(), InvalidArgument, "Kafka source for topic '{}': group_id is empty", o.topic);
  TRIB_CHECK(o.merge_grace.count() >= 0, InvalidArgument, "Kafka source: merge_grace {} ms is negative",
             o.merge_grace.count());
  TRIB_CHECK(!o.idle_end || o.idle_end->count() > 0, InvalidArgument, "Kafka source: idle_end {} ms must be positive",
             o.idle_end ? o.idle_end->count() : 0);
  TRIB_CHECK(o.max_buffered_per_partition >= 1, InvalidArgument,
             "Kafka source: max_buffered_per_partition {} < 1", o.max_buffered_per_partition);
  TRIB_CHECK(o.join_timeout.count() > 0, InvalidArgument, "Kafka source: join_timeout {} ms must be positive",
             o.join_timeout.count());
  TRIB_CHECK(o.schema_check_records >= 0, InvalidArgument, "Kafka source: schema_check_records {} < 0",
             o.schema_check_records);
  return o;
}

}  // namespace

void check_share(const PartitionShare& share, int partition_count, const std::string& topic) {
  TRIB_CHECK(share.members >= 1 && share.index >= 0 && share.index < share.members, InvalidArgument,
             "Kafka source for topic '{}': share {} of {} members is not one of them", topic, share.index,
             share.members);
  // An empty share would leave a worker with nothing to train on while the others wait for it.
  TRIB_CHECK(share.index < partition_count, InvalidArgument,
             "Kafka topic '{}' has {} partition(s), fewer than the {} workers reading it: worker {} would read "
             "nothing (give the topic at least {} partitions, or use fewer workers)",
             topic, partition_count, share.members, share.index, share.members);
}

std::vector<std::int32_t> partitions_of(const PartitionShare& share, int partition_count) {
  std::vector<std::int32_t> out;
  for (std::int32_t p = 0; p < partition_count; ++p)
    if (share.owns(p)) out.push_back(p);
  return out;
}

namespace {

}  // namespace

std::int64_t wall_clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

KafkaSource::Impl::Impl(KafkaSourceOptions opts)
    : options(validated(opts)),
      commit_tag("trib run=" + (options.run_id.empty() ? random_run_id() : options.run_id)),
      decoder(options.schema),
      schema_check(options.schema_check_records, options.topic),
      merge(detail::MergeOptions{.replayable = options.merge_grace.count() > 0,
                                 .grace_ms = options.merge_grace.count(),
                                 .stall_ms = std::max<std::int64_t>(2000, 10 * options.merge_grace.count())}) {
  if (options.dead_letter) {
    std::string topic = options.dead_letter_topic.empty() ? options.topic + ".dlq" : options.dead_letter_topic;
    TRIB_CHECK(is_valid_topic_name(topic) && topic != options.topic, InvalidArgument,
               "Kafka source: dead-letter topic '{}' is invalid or the source topic itself", topic);
    dead_letters = std::make_unique<detail::DeadLetterQueue>(options.kafka, options.topic, std::move(topic));
  }
  consumer = std::make_unique<detail::KafkaConsumer>(
      options.kafka, options.topic, options.group_id, *this,
      options.share ? detail::KafkaConsumer::Assignment::manual : detail::KafkaConsumer::Assignment::group);
  if (options.share) {
    check_share(*options.share, consumer->partition_count(), options.topic);
    const std::vector<std::int32_t> owned = partitions_of(*options.share, consumer->partition_count());
    consumer->assign(owned);
    // A share that owns nothing (its member left the job for good, and the others read its
    // partitions): no assignment comes, and none is waited for.
    if (owned.empty()) {
      std::lock_guard lock(mu);
      joined = true;
    }
  }
  // A position taken before the first assignment could name no offsets, and the first thing a
  // shuffle buffer does is take one.
  const auto deadline = std::chrono::steady_clock::now() + options.join_timeout;
  while (!joined) {
    TRIB_CHECK(std::chrono::steady_clock::now() < deadline, Unavailable,
               "Kafka source: no partition assignment from group '{}' at {} within {} ms (last error: {})",
               options.group_id, options.kafka.bootstrap_servers, options.join_timeout.count(),
               consumer->last_error().empty() ? "none" : consumer->last_error());
    std::vector<detail::MessageHandle> one;
    if (detail::MessageHandle m = consumer->poll(kPollSliceMs)) one.push_back(std::move(m));
    if (!one.empty()) ingest(one, wall_clock_ms());
  }
}

KafkaSource::Impl::~Impl() {
  // Leave the group now, while every member the revoke callback touches (the consumer itself
  // included: reset() nulls the pointer before destroying) is alive.
  try {
    {
      std::lock_guard lock(mu);
      closing = options.reports_applied;
    }
    consumer->close();
  } catch (...) {
    // Leaving the group is best effort in a destructor.
  }
  consumer.reset();
  if (dead_letters) dead_letters->flush(std::chrono::seconds(5));
}

void KafkaSource::Impl::ingest(std::vector<detail::MessageHandle>& messages, std::int64_t now_ms) {
  // Records applied before a restore are skipped undecoded: they only move the offset on.
  std::vector<char> done(messages.size(), 0);
  {
    std::lock_guard lock(mu);
    for (std::size_t i = 0; i < messages.size(); ++i)
      done[i] = messages[i]->err == RD_KAFKA_RESP_ERR_NO_ERROR && applied.skip(messages[i]->partition, messages[i]->offset);
  }
  // Decoded without the lock (it is the expensive part), then handed to the merge under one.
  std::vector<detail::PendingRecord> records;
  std::vector<std::optional<DecodeError>> errors;
  std::vector<std::size_t> from;  // per record, its message
  records.reserve(messages.size());
  errors.reserve(messages.size());
  std::int64_t bytes = 0;
  std::string transient;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const detail::MessageHandle& m = messages[i];
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      check_consumer_error(*m);
      transient = rd_kafka_message_errstr(m.get());
      continue;
    }
    from.push_back(i);
    detail::PendingRecord& r = records.emplace_back();
    std::optional<DecodeError>& error = errors.emplace_back();
    r.partition = m->partition;
    r.offset = m->offset;
    r.timestamp_ms = rd_kafka_message_timestamp(m.get(), nullptr);
    if (r.timestamp_ms < 0) r.timestamp_ms = now_ms;
    const std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
    bytes += static_cast<std::int64_t>(value.size());
    if (done[i]) {
      r.skip = true;
      continue;
    }
    r.features.resize(decoder.feature_count());
    DecodedRow row;
    error = decoder.decode(value, r.features, row);
    r.label = row.label;
    r.id = row.id;
    if (!error) continue;
    r.skip = true;
    r.features.clear();
  }
  // In arrival order: while the schema check decides, poison records wait (a wrong schema
  // must fail before anything is dead-lettered or consumed); once it has, they go first.
  std::vector<detail::PendingRecord> ready;
  ready.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    detail::PendingRecord& r = records[i];
    const rd_kafka_message_t& m = *messages[from[i]];
    const std::string_view key(static_cast<const char*>(m.key), m.key ? m.key_len : 0);
    const std::string_view value(static_cast<const char*>(m.payload), m.payload ? m.len : 0);
    if (!done[from[i]] && schema_check.deciding()) {
      schema_check.observe(errors[i] ? &*errors[i] : nullptr, r.partition, r.offset);  // may throw
      if (schema_check.deciding()) {
        std::lock_guard lock(mu);
        held.push_back(Held{std::move(r), *errors[i], std::string(key), std::string(value)});
        continue;
      }
      std::vector<Held> earlier;
      {
        std::lock_guard lock(mu);
        earlier.swap(held);
      }
      for (Held& h : earlier) {
        dead_letter(h.record, h.key, h.value, h.error);
        ready.push_back(std::move(h.record));
      }
    }
    if (errors[i]) dead_letter(r, key, value, *errors[i]);
    ready.push_back(std::move(r));
  }
  std::lock_guard lock(mu);
  stats.bytes += bytes;
  if (!transient.empty()) stats.last_error = transient;  // librdkafka retries these itself
  for (detail::PendingRecord& r : ready) push(std::move(r), now_ms);
}

void KafkaSource::Impl::dead_letter(const detail::PendingRecord& r, std::string_view key, std::string_view value,
                                    const DecodeError& error) {
  if (dead_letters) dead_letters->send(r.partition, r.offset, r.timestamp_ms, key, value, error);
  std::lock_guard lock(mu);
  ++stats.poison;
}

void KafkaSource::Impl::push(detail::PendingRecord record, std::int64_t now_ms) {
  const std::int32_t partition = record.partition;
  const std::int64_t offset = record.offset;
  const bool skip = record.skip;
  // A skipped record is done at once: poison counts as consumed, and one applied before a
  // restore is done already.
  if (merge.push(partition, std::move(record), now_ms) && skip) applied.consumed(partition, offset);
}

void KafkaSource::Impl::drop_held(std::int32_t partition) {
  std::erase_if(held, [partition](const Held& h) { return h.record.partition == partition; });
}

void KafkaSource::Impl::check_consumer_error(const rd_kafka_message_t& m) const {
  const std::string what = rd_kafka_message_errstr(&m);
  TRIB_CHECK(m.err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && m.err != RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, NotFound,
             "Kafka topic '{}' at {}: {}", options.topic, options.kafka.bootstrap_servers, what);
  TRIB_CHECK(m.err != RD_KAFKA_RESP_ERR__FATAL && m.err != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
                 m.err != RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
             Unavailable, "Kafka consumer for topic '{}' at {}: {}", options.topic, options.kafka.bootstrap_servers,
             what);
}

void KafkaSource::Impl::tend_partitions(std::int64_t now_ms) {
  const std::int64_t limit = options.max_buffered_per_partition;
  for (std::int32_t p : merge.partitions()) {
    const std::int64_t buffered = merge.buffered(p);
    if (buffered == 0) merge.set_high_watermark(p, consumer->cached_high_watermark(p), now_ms);
    const bool is_paused = paused.contains(p);
    if (!is_paused && buffered >= limit) {
      consumer->pause(p, true);
      paused.insert(p);
    } else if (is_paused && buffered <= limit / 2) {
      consumer->pause(p, false);
      paused.erase(p);
    }
  }
}

data::Batch KafkaSource::Impl::assemble(std::vector<detail::PendingRecord>& records) {
  const auto n = static_cast<std::int64_t>(records.size());
  const auto f = static_cast<std::int64_t>(decoder.feature_count());
  Tensor features = Tensor::empty(DType::f32, Shape{n, f});
  Tensor labels = Tensor::empty(DType::i32, Shape{n});
  Tensor times = Tensor::empty(DType::i64, Shape{n});
  Tensor partitions = Tensor::empty(DType::i32, Shape{n});
  Tensor offsets = Tensor::empty(DType::i64, Shape{n});
  const bool has_id = !options.schema.id_field.empty();
  Tensor ids = has_id ? Tensor::empty(DType::i64, Shape{n}) : Tensor();
  float* x = features.data<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    const detail::PendingRecord& r = records[i];
    std::copy(r.features.begin(), r.features.end(), x + i * f);
    labels.data<std::int32_t>()[i] = r.label;
    times.data<std::int64_t>()[i] = r.timestamp_ms;
    offsets.data<std::int64_t>()[i] = r.offset;
    partitions.data<std::int32_t>()[i] = r.partition;
    if (has_id) ids.data<std::int64_t>()[i] = r.id;
  }
  data::Batch batch(std::move(features), std::move(labels));
  batch.set(kEventTime, std::move(times));
  batch.set(kOffset, std::move(offsets));
  batch.set(kPartition, std::move(partitions));
  if (has_id) batch.set(kEventId, std::move(ids));
  return batch;
}

KafkaSource::KafkaSource(KafkaSourceOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

KafkaSource::~KafkaSource() = default;

std::optional<data::Batch> KafkaSource::next(std::int64_t max_rows) {
  TRIB_CHECK(max_rows >= 1, InvalidArgument, "KafkaSource::next: max_rows {} < 1", max_rows);
  Impl& s = *impl_;
  const auto start = std::chrono::steady_clock::now();
  std::vector<detail::PendingRecord> out;
  for (;;) {
    if (s.interrupted.load()) return std::nullopt;
    // Take what has arrived, without waiting. librdkafka delivers a backlog in fetch-sized
    // runs of one partition (thousands of records), and the merge can release nothing while
    // another owned partition still has records on the way, so the room must hold a run of
    // every partition: up to max_buffered_per_partition each, where tend_partitions() pauses
    // a partition's fetching. That bounds memory however long a partition holds back.
    std::int64_t room = 0;
    {
      std::lock_guard lock(s.mu);
      const auto owned = static_cast<std::int64_t>(s.merge.partition_count());
      room = std::max(4 * max_rows + kDrainSlack, owned * s.options.max_buffered_per_partition) - s.merge.buffered();
    }
    std::vector<detail::MessageHandle> arrived;
    while (static_cast<std::int64_t>(arrived.size()) < room) {
      detail::MessageHandle m = s.consumer->poll(0);
      if (!m) break;
      arrived.push_back(std::move(m));
    }
    if (!arrived.empty()) s.ingest(arrived, wall_clock_ms());
    if (s.dead_letters) s.dead_letters->poll();
    std::optional<std::int64_t> retry_at;
    const std::int64_t now = wall_clock_ms();
    {
      std::lock_guard lock(s.mu);
      s.tend_partitions(now);
      s.merge.take(max_rows, now, out);
      // Only for a caller that reports applied batches: otherwise nothing would leave the queue.
      if (s.options.reports_applied)
        for (const detail::PendingRecord& r : out) s.applied.handed_out(r.partition, r.offset);
      retry_at = s.merge.retry_at();
      s.stats.records += static_cast<std::int64_t>(out.size());
    }
    if (!out.empty()) return s.assemble(out);
    if (s.options.idle_end && std::chrono::steady_clock::now() - start >= *s.options.idle_end) return std::nullopt;
    int wait_ms = kPollSliceMs;
    if (retry_at) wait_ms = static_cast<int>(std::clamp<std::int64_t>(*retry_at - now, 1, kPollSliceMs));
    std::vector<detail::MessageHandle> one;
    if (detail::MessageHandle m = s.consumer->poll(wait_ms)) one.push_back(std::move(m));
    if (!one.empty()) s.ingest(one, wall_clock_ms());
  }
}

void KafkaSource::service(std::chrono::milliseconds wait) {
  Impl& s = *impl_;
  std::vector<detail::MessageHandle> one;
  if (detail::MessageHandle m = s.consumer->poll(static_cast<int>(std::clamp<std::int64_t>(wait.count(), 0, kPollSliceMs))))
    one.push_back(std::move(m));
  if (!one.empty()) s.ingest(one, wall_clock_ms());
  std::lock_guard lock(s.mu);
  s.tend_partitions(wall_clock_ms());
}

data::DataPosition KafkaSource::position() const {
  data::DataPosition position;
  std::lock_guard lock(impl_->mu);
  set_offsets(position, impl_->options.topic, impl_->merge.positions());
  return position;
}

data::DataPosition KafkaSource::applied_position() const {
  data::DataPosition position;
  std::lock_guard lock(impl_->mu);
  set_progress(position, impl_->options.topic, impl_->applied.progress(impl_->merge.positions()));
  return position;
}

namespace {

// The records of `batch` (one a KafkaSource handed out), marked applied in `applied`.
void mark_applied(const KafkaSourceOptions& options, const data::Batch& batch, AppliedOffsets& applied) {
  TRIB_CHECK(options.reports_applied, InvalidArgument,
             "KafkaSource::applied: the source for topic '{}' was made without options.reports_applied", options.topic);
  TRIB_CHECK(batch.has(KafkaSource::kPartition) && batch.has(KafkaSource::kOffset), InvalidArgument,
             "KafkaSource::applied: the batch has no '{}' and '{}' columns (it did not come from a KafkaSource)",
             KafkaSource::kPartition, KafkaSource::kOffset);
  const auto partitions = batch.get(KafkaSource::kPartition).span<std::int32_t>();
  const auto offsets = batch.get(KafkaSource::kOffset).span<std::int64_t>();
  for (std::size_t i = 0; i < partitions.size(); ++i) applied.applied(partitions[i], offsets[i]);
}

}  // namespace

void KafkaSource::applied(const data::Batch& batch) {
  std::lock_guard lock(impl_->mu);
  mark_applied(impl_->options, batch, impl_->applied);
}

data::DataPosition KafkaSource::applied_position_after(const data::Batch& batch) const {
  data::DataPosition position;
  std::lock_guard lock(impl_->mu);
  // A copy: the batch is not applied yet. It holds what is handed out and pending, a shuffle
  // buffer's worth at most.
  AppliedOffsets after = impl_->applied;
  mark_applied(impl_->options, batch, after);
  set_progress(position, impl_->options.topic, after.progress(impl_->merge.positions()));
  return position;
}

void KafkaSource::interrupt() { impl_->interrupted.store(true); }

std::vector<PartitionLag> KafkaSource::lag() const {
  std::vector<PartitionLag> out;
  std::lock_guard lock(impl_->mu);
  for (const auto& [p, next] : impl_->merge.positions()) {
    PartitionLag l;
    l.partition = p;
    l.next_offset = next;
    l.high_watermark = impl_->consumer->cached_high_watermark(p);
    l.lag = l.high_watermark >= 0 ? std::max<std::int64_t>(0, l.high_watermark - next) : -1;
    out.push_back(l);
  }
  return out;
}

KafkaSourceStats KafkaSource::stats() const {
  KafkaSourceStats s;
  {
    std::lock_guard lock(impl_->mu);
    s = impl_->stats;
    s.unapplied = impl_->applied.pending();
  }
  if (impl_->dead_letters) {
    ProducerStats d = impl_->dead_letters->stats();
    s.dead_lettered = d.delivered;
    s.dead_letter_failures = d.failed;
    if (!d.last_error.empty()) s.last_error = "dead-letter topic: " + d.last_error;
  }
  return s;
}

std::vector<std::int32_t> KafkaSource::assignment() const {
  std::lock_guard lock(impl_->mu);
  return impl_->merge.partitions();
}

const KafkaSourceOptions& KafkaSource::options() const { return impl_->options; }

}  // namespace trib::stream
