#include "trib/stream/mock_broker.h"

#include <cstdint>
#include <vector>

#include "stream/kafka_handles.h"
// After rdkafka.h (which kafka_handles.h includes), as it demands.
#include <librdkafka/rdkafka_mock.h>

#include "trib/core/error.h"

namespace trib::stream {

struct MockBroker::Handles {
  // The mock cluster runs on this client's background thread, so the client must outlive it;
  // members are destroyed in reverse order, cluster first.
  detail::KafkaHandle host;
  struct ClusterDestroy {
    void operator()(rd_kafka_mock_cluster_t* c) const { rd_kafka_mock_cluster_destroy(c); }
  };
  std::unique_ptr<rd_kafka_mock_cluster_t, ClusterDestroy> cluster;
};

bool is_valid_topic_name(const std::string& name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

MockBroker::MockBroker(MockBrokerOptions options) : handles_(std::make_unique<Handles>()) {
  TRIB_CHECK(options.brokers >= 1 && options.brokers <= 16, InvalidArgument,
             "built-in broker: {} brokers requested, expected 1..16", options.brokers);
  // The host client connects nowhere; without a bootstrap it would warn about exactly that.
  detail::ConfHandle conf = detail::make_conf(KafkaConfig{}, {{"log_level", "2"}});
  handles_->host = detail::make_client(RD_KAFKA_PRODUCER, std::move(conf), "built-in broker host");
  handles_->cluster.reset(rd_kafka_mock_cluster_new(handles_->host.get(), options.brokers));
  TRIB_CHECK(handles_->cluster != nullptr, Unavailable, "built-in broker: librdkafka could not start a mock cluster");
  bootstrap_ = rd_kafka_mock_cluster_bootstraps(handles_->cluster.get());
  for (const TopicSpec& topic : options.topics) create_topic(topic);
}

MockBroker::~MockBroker() = default;

void MockBroker::create_topic(const TopicSpec& topic) {
  TRIB_CHECK(is_valid_topic_name(topic.name), InvalidArgument,
             "topic name '{}' is invalid: expected 1-249 characters of [a-zA-Z0-9._-]", topic.name);
  TRIB_CHECK(topic.partitions >= 1 && topic.partitions <= 1024, InvalidArgument,
             "topic '{}': {} partitions requested, expected 1..1024", topic.name, topic.partitions);
  rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(handles_->cluster.get(), topic.name.c_str(), topic.partitions, /*replication=*/1);
  TRIB_CHECK(err == RD_KAFKA_RESP_ERR_NO_ERROR, InvalidArgument, "built-in broker: cannot create topic '{}': {}",
             topic.name, rd_kafka_err2str(err));
}

void MockBroker::refuse_next_commits(int count) {
  TRIB_CHECK(count >= 1 && count <= 1000, InvalidArgument, "built-in broker: {} commits to refuse, expected 1..1000",
             count);
  // Kafka's API key of OffsetCommit (librdkafka keeps its table of keys in a private header).
  constexpr std::int16_t kOffsetCommit = 8;
  std::vector<rd_kafka_resp_err_t> errors(static_cast<std::size_t>(count), RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
  rd_kafka_mock_push_request_errors_array(handles_->cluster.get(), kOffsetCommit, errors.size(), errors.data());
}

}  // namespace trib::stream
