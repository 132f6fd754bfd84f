#include "stream/kafka_consumer.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string_view>

#include "trib/core/error.h"

namespace trib::stream::detail {
namespace {

// Defaults for a training consumer; the user's properties override them.
Properties consumer_defaults(const std::string& group_id) {
  return {
      {"group.id", group_id},
      // Offsets are committed by the trainer after a checkpoint, and on hand-over; never on a timer.
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      // Incremental rebalancing: partitions that stay keep their buffers, and only moving
      // partitions are revoked, after the group has settled (so their hand-over commit lands).
      {"partition.assignment.strategy", "cooperative-sticky"},
      {"allow.auto.create.topics", "false"},
      // An offset retention has deleted (a stale restore) continues at the earliest one left.
      {"auto.offset.reset", "earliest"},
      // A short fetch wait keeps watermarks fresh, which the event-time merge waits on.
      {"fetch.wait.max.ms", "100"},
      {"session.timeout.ms", "10000"},
      {"heartbeat.interval.ms", "1000"},
      {"log_level", "2"},  // errors reach us through the error callback and our messages
  };
}

}  // namespace

KafkaConsumer::KafkaConsumer(const KafkaConfig& config, std::string topic, const std::string& group_id,
                             RebalanceHandler& handler, Assignment assignment)
    : topic_(std::move(topic)),
      bootstrap_(config.bootstrap_servers),
      timeout_ms_(static_cast<int>(config.connect_timeout.count())),
      handler_(handler),
      assignment_(assignment) {
  validate(config);
  TRIB_CHECK(!group_id.empty(), InvalidArgument, "Kafka source for topic '{}': group_id is empty", topic_);
  ConfHandle conf = make_conf(config, consumer_defaults(group_id));
  if (assignment_ == Assignment::group) rd_kafka_conf_set_rebalance_cb(conf.get(), &KafkaConsumer::on_rebalance);
  rd_kafka_conf_set_error_cb(conf.get(), &KafkaConsumer::on_error);
  rd_kafka_conf_set_opaque(conf.get(), this);
  rk_ = make_client(RD_KAFKA_CONSUMER, std::move(conf), fmt::format("consumer for topic '{}'", topic_));
  rd_kafka_poll_set_consumer(rk_.get());

  MetadataHandle md = fetch_metadata(rk_.get(), bootstrap_, timeout_ms_, [this] { return last_error(); });
  partition_count_ = detail::partition_count(*md, topic_, bootstrap_);
  if (assignment_ == Assignment::manual) return;

  PartitionList subscription = make_partition_list(1);
  rd_kafka_topic_partition_list_add(subscription.get(), topic_.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(rk_.get(), subscription.get());
  TRIB_CHECK(err == RD_KAFKA_RESP_ERR_NO_ERROR, Unavailable, "cannot subscribe to Kafka topic '{}' at {}: {}",
             topic_, bootstrap_, rd_kafka_err2str(err));
}

KafkaConsumer::~KafkaConsumer() {
  try {
    close();
  } catch (...) {
    // A handler failing while the group is left must not escape a destructor.
  }
}

void KafkaConsumer::close() {
  if (closed_ || !rk_) return;
  closed_ = true;
  rd_kafka_consumer_close(rk_.get());
  pending_error_ = nullptr;
}

MessageHandle KafkaConsumer::poll(int timeout_ms) {
  MessageHandle m(rd_kafka_consumer_poll(rk_.get(), timeout_ms));
  if (pending_error_) std::rethrow_exception(std::exchange(pending_error_, nullptr));
  return m;
}

void KafkaConsumer::on_rebalance(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                                 void* opaque) {
  static_cast<KafkaConsumer*>(opaque)->rebalance(err, parts);
}

void KafkaConsumer::on_error(rd_kafka_t*, int, const char* reason, void* opaque) {
  auto* self = static_cast<KafkaConsumer*>(opaque);
  std::lock_guard lock(self->error_mu_);
  self->last_error_ = reason;
}

void KafkaConsumer::rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  const bool cooperative = std::string_view(rd_kafka_rebalance_protocol(rk_.get())) == "COOPERATIVE";
  std::vector<std::int32_t> partitions;
  for (int i = 0; i < parts->cnt; ++i)
    if (topic_ == parts->elems[i].topic) partitions.push_back(parts->elems[i].partition);

  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    try {
      PartitionOffsets starts = handler_.on_assign(partitions);
      for (int i = 0; i < parts->cnt; ++i)
        if (auto it = starts.find(parts->elems[i].partition); it != starts.end()) parts->elems[i].offset = it->second;
    } catch (...) {
      pending_error_ = std::current_exception();  // assign anyway, so the group protocol goes on
    }
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_.get(), parts)) rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk_.get(), parts);
    }
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    try {
      handler_.on_revoke(partitions, rd_kafka_assignment_lost(rk_.get()) != 0);
    } catch (...) {
      pending_error_ = std::current_exception();
    }
  } else {
    std::lock_guard lock(error_mu_);
    last_error_ = fmt::format("rebalance failed: {}", rd_kafka_err2str(err));
  }
  if (cooperative) {
    if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk_.get(), parts)) rd_kafka_error_destroy(e);
  } else {
    rd_kafka_assign(rk_.get(), nullptr);
  }
}

void KafkaConsumer::throw_if_error(rd_kafka_error_t* error, std::string_view action) const {
  if (error == nullptr) return;
  std::string what = rd_kafka_error_string(error);
  rd_kafka_error_destroy(error);
  throw Unavailable(fmt::format("cannot {} Kafka topic '{}' at {}: {}", action, topic_, bootstrap_, what));
}

void KafkaConsumer::assign(const std::vector<std::int32_t>& partitions) {
  TRIB_CHECK(assignment_ == Assignment::manual, InvalidArgument,
             "consumer of Kafka topic '{}': partitions are assigned by its group, not by assign()", topic_);
  if (partitions.empty()) return;
  PartitionOffsets starts = handler_.on_assign(partitions);
  PartitionOffsets list;
  for (std::int32_t p : partitions) list[p] = starts.contains(p) ? starts.at(p) : RD_KAFKA_OFFSET_INVALID;
  throw_if_error(rd_kafka_incremental_assign(rk_.get(), list_of(list).get()), "assign partitions of");
}

void KafkaConsumer::unassign(const std::vector<std::int32_t>& partitions) {
  TRIB_CHECK(assignment_ == Assignment::manual, InvalidArgument,
             "consumer of Kafka topic '{}': partitions are assigned by its group, not by unassign()", topic_);
  if (partitions.empty()) return;
  handler_.on_revoke(partitions, /*lost=*/true);
  PartitionOffsets list;
  for (std::int32_t p : partitions) list[p] = RD_KAFKA_OFFSET_INVALID;
  throw_if_error(rd_kafka_incremental_unassign(rk_.get(), list_of(list).get()), "unassign partitions of");
}

PartitionList KafkaConsumer::list_of(const PartitionOffsets& offsets) const {
  PartitionList list = make_partition_list(static_cast<int>(offsets.size()));
  for (const auto& [p, offset] : offsets)
    rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), p)->offset = offset;
  return list;
}

std::string KafkaConsumer::commit(const PartitionOffsets& offsets, const std::string& metadata) {
  if (offsets.empty()) return "";
  PartitionList list = list_of(offsets);
  for (int i = 0; i < list->cnt; ++i) {
    // librdkafka free()s metadata with the list, so each element gets its own malloc()ed copy.
    list->elems[i].metadata = std::malloc(std::max<std::size_t>(metadata.size(), 1));
    std::copy(metadata.begin(), metadata.end(), static_cast<char*>(list->elems[i].metadata));
    list->elems[i].metadata_size = metadata.size();
  }
  rd_kafka_resp_err_t err = rd_kafka_commit(rk_.get(), list.get(), /*async=*/0);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return rd_kafka_err2str(err);
  for (int i = 0; i < list->cnt; ++i)
    if (list->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR)
      return fmt::format("partition {}: {}", list->elems[i].partition, rd_kafka_err2str(list->elems[i].err));
  return "";
}

std::map<std::int32_t, CommittedOffset> KafkaConsumer::committed(const std::vector<std::int32_t>& partitions) {
  PartitionOffsets query;
  for (std::int32_t p : partitions) query[p] = RD_KAFKA_OFFSET_INVALID;
  PartitionList list = list_of(query);
  rd_kafka_resp_err_t err = rd_kafka_committed(rk_.get(), list.get(), timeout_ms_);
  TRIB_CHECK(err == RD_KAFKA_RESP_ERR_NO_ERROR, Unavailable,
             "cannot read committed offsets of topic '{}' from the group coordinator at {}: {}", topic_, bootstrap_,
             rd_kafka_err2str(err));
  std::map<std::int32_t, CommittedOffset> out;
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& e = list->elems[i];
    CommittedOffset c;
    c.offset = e.err == RD_KAFKA_RESP_ERR_NO_ERROR && e.offset >= 0 ? e.offset : -1;
    if (e.metadata != nullptr) c.metadata.assign(static_cast<const char*>(e.metadata), e.metadata_size);
    out[e.partition] = std::move(c);
  }
  return out;
}

std::pair<std::int64_t, std::int64_t> KafkaConsumer::query_watermarks(std::int32_t partition) {
  std::int64_t low = 0, high = 0;
  rd_kafka_resp_err_t err =
      rd_kafka_query_watermark_offsets(rk_.get(), topic_.c_str(), partition, &low, &high, timeout_ms_);
  TRIB_CHECK(err == RD_KAFKA_RESP_ERR_NO_ERROR, Unavailable, "cannot read offsets of '{}' [{}] at {}: {}", topic_,
             partition, bootstrap_, rd_kafka_err2str(err));
  return {low, high};
}

std::int64_t KafkaConsumer::cached_high_watermark(std::int32_t partition) const {
  std::int64_t low = 0, high = 0;
  rd_kafka_resp_err_t err = rd_kafka_get_watermark_offsets(rk_.get(), topic_.c_str(), partition, &low, &high);
  return err == RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0 ? high : -1;
}

void KafkaConsumer::seek(const PartitionOffsets& offsets) {
  if (offsets.empty()) return;
  PartitionList list = list_of(offsets);
  // librdkafka before 2.1.0 waited a thousandth of the timeout given (its #4230): 10 ms for the
  // default 10 s, which a loaded host's fetcher thread misses (an allreduce stream job's rewind
  // then failed with "Timed out waiting for 2 remaining partition seek(s)"). Scaled up there.
  const long long wait_ms = rd_kafka_version() < 0x02010000 ? 1000LL * timeout_ms_ : timeout_ms_;
  const int timeout = static_cast<int>(std::min<long long>(wait_ms, std::numeric_limits<int>::max()));
  throw_if_error(rd_kafka_seek_partitions(rk_.get(), list.get(), timeout), "seek");
  for (int i = 0; i < list->cnt; ++i)
    TRIB_CHECK(list->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR, Unavailable,
               "cannot seek '{}' [{}] to offset {}: {}", topic_, list->elems[i].partition, list->elems[i].offset,
               rd_kafka_err2str(list->elems[i].err));
}

void KafkaConsumer::pause(std::int32_t partition, bool paused) {
  PartitionList list = list_of({{partition, RD_KAFKA_OFFSET_INVALID}});
  if (paused)
    rd_kafka_pause_partitions(rk_.get(), list.get());
  else
    rd_kafka_resume_partitions(rk_.get(), list.get());
}

std::string KafkaConsumer::last_error() const {
  std::lock_guard lock(error_mu_);
  return last_error_;
}

}  // namespace trib::stream::detail
