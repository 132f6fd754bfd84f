// The librdkafka consumer of one topic behind KafkaSource: a consumer-group member, or one
// whose partitions its caller assigns. It owns the client handle, turns rebalance events (or
// manual assignments) into calls on a RebalanceHandler (which decides where each new
// partition starts and what to do with revoked ones), and wraps the offset calls the source
// needs. Errors name the bootstrap address, the topic or the group.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "stream/kafka_handles.h"
#include "trib/stream/kafka_config.h"
#include "trib/stream/stream_position.h"

namespace trib::stream::detail {

class RebalanceHandler {
 public:
  virtual ~RebalanceHandler() = default;
  // Partitions just given to this member (possibly none: the member joined but got nothing);
  // returns the offset each one starts at.
  virtual PartitionOffsets on_assign(const std::vector<std::int32_t>& partitions) = 0;
  // Partitions taken away. `lost`: the group moved on without us (session timeout), so
  // committing for them is pointless.
  virtual void on_revoke(const std::vector<std::int32_t>& partitions, bool lost) = 0;
};

struct CommittedOffset {
  std::int64_t offset = -1;  // -1: none committed
  std::string metadata;
};

class KafkaConsumer {
 public:
  // group: subscribe to the topic as a member of the group, which assigns partitions.
  // manual: the caller assigns them (assign/unassign); group_id only names the commits.
  enum class Assignment { group, manual };

  // Connects, checks that `topic` exists (Unavailable / NotFound naming address and topic,
  // within config.connect_timeout), and subscribes as a member of `group_id` (group). The
  // handler is called from poll() and close() (group), or from assign() and unassign()
  // (manual), on the polling thread, and must outlive this object.
  KafkaConsumer(const KafkaConfig& config, std::string topic, const std::string& group_id,
                RebalanceHandler& handler, Assignment assignment = Assignment::group);
  ~KafkaConsumer();
  KafkaConsumer(const KafkaConsumer&) = delete;
  KafkaConsumer& operator=(const KafkaConsumer&) = delete;

  // The next message or consumer error, or null after `timeout_ms`; serves rebalances.
  MessageHandle poll(int timeout_ms);
  // Leaves the group: revokes (calling the handler) and stops. Idempotent.
  void close();
  // Manual assignment: starts fetching `partitions` where the handler's on_assign says, or
  // stops fetching them after its on_revoke (lost: no hand-over commit; their next owner
  // starts from the job's own positions). Unavailable when librdkafka refuses.
  void assign(const std::vector<std::int32_t>& partitions);
  void unassign(const std::vector<std::int32_t>& partitions);

  // Synchronous commit of `offsets` with `metadata`; returns "" or the error. Thread-safe.
  std::string commit(const PartitionOffsets& offsets, const std::string& metadata);
  std::map<std::int32_t, CommittedOffset> committed(const std::vector<std::int32_t>& partitions);
  // Asks the broker: (low, high) watermark of a partition.
  std::pair<std::int64_t, std::int64_t> query_watermarks(std::int32_t partition);
  // The high watermark from the latest fetch response, -1 if none yet. Cheap; thread-safe.
  std::int64_t cached_high_watermark(std::int32_t partition) const;
  // Moves assigned partitions to new offsets (records in flight are discarded).
  void seek(const PartitionOffsets& offsets);
  void pause(std::int32_t partition, bool paused);

  const std::string& topic() const { return topic_; }
  const std::string& bootstrap() const { return bootstrap_; }
  int partition_count() const { return partition_count_; }
  std::string last_error() const;

 private:
  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                           void* opaque);
  static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  void rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);
  PartitionList list_of(const PartitionOffsets& offsets) const;
  // Unavailable "cannot <action> Kafka topic ... : <librdkafka's reason>" for an error (which
  // it destroys); nothing for null.
  void throw_if_error(rd_kafka_error_t* error, std::string_view action) const;

  std::string topic_;
  std::string bootstrap_;
  int timeout_ms_;
  RebalanceHandler& handler_;
  KafkaHandle rk_;
  int partition_count_ = 0;
  Assignment assignment_;
  bool closed_ = false;
  // What a rebalance handler threw inside librdkafka's callback, rethrown by poll(): exceptions
  // must not cross the C library.
  std::exception_ptr pending_error_;
  mutable std::mutex error_mu_;
  std::string last_error_;
};

}  // namespace trib::stream::detail
