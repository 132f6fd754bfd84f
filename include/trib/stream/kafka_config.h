// How to reach a Kafka cluster: the bootstrap address plus any librdkafka properties (the
// usual security settings of a real cluster: security.protocol, sasl.*, ssl.*). Every Kafka
// client in trib_stream (source, producer, generator) is configured from one of these.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace trib::stream {

struct KafkaConfig {
  // "host:port[,host:port...]"; for the built-in broker, MockBroker::bootstrap().
  std::string bootstrap_servers;
  // Passed to librdkafka as they are, after trib's defaults, so they may override them
  // (e.g. {"security.protocol", "SASL_SSL"}, {"sasl.mechanisms", "PLAIN"}, ...).
  std::map<std::string, std::string> properties;
  // How long a client may take to reach the cluster before it reports it unreachable.
  std::chrono::milliseconds connect_timeout{10'000};
};

// Throws InvalidArgument naming the problem (empty bootstrap, non-positive timeout).
void validate(const KafkaConfig& config);

}  // namespace trib::stream
