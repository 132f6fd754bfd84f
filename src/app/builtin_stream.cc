#include "app/builtin_stream.h"

#include <cstdio>

#include <fmt/format.h>

#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"

namespace trib::app {

BuiltinStream::BuiltinStream(config::JobConfig& job) {
  if (!job.data.stream() || !job.data.kafka.bootstrap_servers.empty()) return;
  const config::GeneratorConfig& g = job.data.generator;
  broker_ = std::make_unique<stream::MockBroker>(
      stream::MockBrokerOptions{.brokers = 1, .topics = {{job.data.kafka.topic, g.partitions}}});
  fmt::print("built-in Kafka broker at {} (topic '{}', {} partitions); generator at {} events/s{}\n",
             broker_->bootstrap(), job.data.kafka.topic, g.partitions, g.rate,
             g.drift_after_s >= 0 ? fmt::format(", drift after {} s", g.drift_after_s) : "");
  std::fflush(stdout);
  // The roles get the job through its YAML: the address goes in there.
  job = config::parse_job_config(job.resolved_yaml, job.source_file,
                                 {fmt::format("data.kafka.bootstrap_servers=\"{}\"", broker_->bootstrap())});

  stream::ProduceOptions o;
  o.kafka.bootstrap_servers = broker_->bootstrap();
  o.topic = job.data.kafka.topic;
  o.format = stream::parse_record_format(job.data.schema.format);
  o.rate = g.rate;
  o.count = g.count;
  o.duration_s = g.duration_s;
  o.generator.seed = g.seed;
  o.generator.drift_after_seconds = g.drift_after_s;
  generator_ = std::thread([this, o] {
    try {
      stream::ProduceReport r = stream::produce_events(o, stop_);
      fmt::print("generator: produced {} events ({} fraud){}\n", r.produced, r.fraud,
                 r.drift_at >= 0 ? fmt::format(", drift at event id {}", r.drift_at) : "");
    } catch (const std::exception& e) {
      fmt::print(stderr, "generator failed: {}\n", e.what());
    }
    std::fflush(stdout);
  });
}

BuiltinStream::~BuiltinStream() {
  stop_ = true;
  if (generator_.joinable()) generator_.join();
}

}  // namespace trib::app
