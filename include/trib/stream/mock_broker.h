// The built-in broker: librdkafka's mock cluster, a real Kafka-protocol endpoint on loopback
// (kcat and any other client can use it) that keeps its topics in memory. It lets a streaming
// job, its tests and its benchmark run with no Kafka installed.
//
// Limits (those of the mock cluster): data lives as long as the object; each partition keeps
// about its last 5 MB; no authentication; the port is chosen by the system.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace trib::stream {

struct TopicSpec {
  std::string name;
  int partitions = 4;
};

struct MockBrokerOptions {
  int brokers = 1;  // partitions are spread over them; 1 is plenty on one machine
  std::vector<TopicSpec> topics;
};

class MockBroker {
 public:
  // Starts the cluster and creates options.topics; throws InvalidArgument for bad options and
  // Unavailable if librdkafka cannot start it.
  explicit MockBroker(MockBrokerOptions options = {});
  ~MockBroker();
  MockBroker(const MockBroker&) = delete;
  MockBroker& operator=(const MockBroker&) = delete;

  // "127.0.0.1:PORT[,...]": what clients use as bootstrap.servers.
  const std::string& bootstrap() const { return bootstrap_; }

  // Creates a topic; throws InvalidArgument naming it if it exists or the name is invalid.
  void create_topic(const TopicSpec& topic);

  // Tests: the next `count` offset commits, from any client, are refused as a coordinator
  // refuses them during a rebalance (REBALANCE_IN_PROGRESS). `count` must be positive.
  void refuse_next_commits(int count);

 private:
  struct Handles;  // the host rd_kafka_t and its mock cluster (librdkafka types stay private)
  std::unique_ptr<Handles> handles_;
  std::string bootstrap_;
};

// Kafka's rule for topic names: 1-249 characters of [a-zA-Z0-9._-], not "." or "..".
bool is_valid_topic_name(const std::string& name);

}  // namespace trib::stream
