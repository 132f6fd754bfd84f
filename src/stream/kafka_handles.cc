#include "stream/kafka_handles.h"

#include <algorithm>
#include <chrono>

#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::stream {

void validate(const KafkaConfig& config) {
  TRIB_CHECK(!config.bootstrap_servers.empty(), InvalidArgument,
             "Kafka bootstrap_servers is empty: give host:port of a broker (or start the built-in one)");
  TRIB_CHECK(config.connect_timeout.count() > 0, InvalidArgument,
             "Kafka connect_timeout {} ms must be positive", config.connect_timeout.count());
}

namespace detail {

void set_property(rd_kafka_conf_t* conf, const std::string& key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
    throw InvalidArgument(fmt::format("Kafka property '{}'='{}' rejected: {}", key, value, err));
}

ConfHandle make_conf(const KafkaConfig& config, const Properties& defaults) {
  ConfHandle conf(rd_kafka_conf_new());
  for (const auto& [key, value] : defaults) set_property(conf.get(), key, value);
  if (!config.bootstrap_servers.empty()) set_property(conf.get(), "bootstrap.servers", config.bootstrap_servers);
  for (const auto& [key, value] : config.properties) set_property(conf.get(), key, value);
  return conf;
}

KafkaHandle make_client(rd_kafka_type_t type, ConfHandle conf, std::string_view what) {
  char err[512];
  // rd_kafka_new takes the conf over only when it succeeds.
  rd_kafka_t* rk = rd_kafka_new(type, conf.get(), err, sizeof err);
  if (rk == nullptr) throw Unavailable(fmt::format("cannot create Kafka {}: {}", what, err));
  (void)conf.release();
  return KafkaHandle(rk);
}

PartitionList make_partition_list(int capacity) {
  return PartitionList(rd_kafka_topic_partition_list_new(std::max(capacity, 1)));
}

MetadataHandle fetch_metadata(rd_kafka_t* rk, const std::string& bootstrap, int timeout_ms,
                              const std::function<std::string()>& last_error) {
  const rd_kafka_metadata_t* metadata = nullptr;
  const auto start = std::chrono::steady_clock::now();
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, /*all_topics=*/1, nullptr, &metadata, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    const std::string detail = last_error ? last_error() : std::string();
    throw Unavailable(fmt::format("Kafka broker at {} unreachable after {} ms (timeout {} ms): {}{}{}", bootstrap,
                                  waited.count(), timeout_ms, rd_kafka_err2str(err), detail.empty() ? "" : "; ",
                                  detail));
  }
  return MetadataHandle(metadata);
}

int partition_count(const rd_kafka_metadata_t& metadata, const std::string& topic, const std::string& bootstrap) {
  std::vector<std::string> names;
  for (int i = 0; i < metadata.topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& t = metadata.topics[i];
    if (topic == t.topic && t.err == RD_KAFKA_RESP_ERR_NO_ERROR && t.partition_cnt > 0) return t.partition_cnt;
    if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR) names.emplace_back(t.topic);
  }
  std::sort(names.begin(), names.end());
  throw NotFound(fmt::format("Kafka topic '{}' does not exist at {} (topics there: {})", topic, bootstrap,
                             names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
}

}  // namespace detail
}  // namespace trib::stream
