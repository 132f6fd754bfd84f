// RAII owners for librdkafka's C handles and the one place that turns a KafkaConfig into an
// rd_kafka_conf_t. Internal: public headers never expose librdkafka types.
#pragma once

#include <librdkafka/rdkafka.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trib/stream/kafka_config.h"

namespace trib::stream::detail {

struct KafkaDestroy {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
struct ConfDestroy {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
struct MessageDestroy {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
struct PartitionListDestroy {
  void operator()(rd_kafka_topic_partition_list_t* l) const { rd_kafka_topic_partition_list_destroy(l); }
};
struct MetadataDestroy {
  void operator()(const rd_kafka_metadata_t* m) const { rd_kafka_metadata_destroy(m); }
};

using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaDestroy>;
using ConfHandle = std::unique_ptr<rd_kafka_conf_t, ConfDestroy>;
using MessageHandle = std::unique_ptr<rd_kafka_message_t, MessageDestroy>;
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDestroy>;
using MetadataHandle = std::unique_ptr<const rd_kafka_metadata_t, MetadataDestroy>;

using Properties = std::vector<std::pair<std::string, std::string>>;

// A conf with `defaults`, then bootstrap.servers, then the user's properties (which win).
// Throws InvalidArgument naming a property librdkafka rejects.
ConfHandle make_conf(const KafkaConfig& config, const Properties& defaults);

// Sets one property; throws InvalidArgument naming it when librdkafka rejects it.
void set_property(rd_kafka_conf_t* conf, const std::string& key, const std::string& value);

// Creates a client from `conf` (which it takes over); throws Unavailable with librdkafka's
// reason when it cannot.
KafkaHandle make_client(rd_kafka_type_t type, ConfHandle conf, std::string_view what);

PartitionList make_partition_list(int capacity);

// Cluster metadata for every topic, or Unavailable naming `bootstrap` when no broker answers
// within `timeout_ms`. `last_error` gives librdkafka's latest complaint (from the client's
// error callback, e.g. "Connect to ipv4#127.0.0.1:1 failed: Connection refused") for the message.
MetadataHandle fetch_metadata(rd_kafka_t* rk, const std::string& bootstrap, int timeout_ms,
                              const std::function<std::string()>& last_error);

// The partition count of `topic` in `metadata`; throws NotFound naming the topic, the
// bootstrap address and the topics that do exist.
int partition_count(const rd_kafka_metadata_t& metadata, const std::string& topic,
                    const std::string& bootstrap);

}  // namespace trib::stream::detail
