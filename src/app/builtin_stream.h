// `trib train` of a stream job that names no broker (data.kafka.bootstrap_servers empty):
// the launcher hosts a built-in broker (librdkafka's mock cluster) with the job's topic and an
// event generator thread feeding it (data.generator), and hands the broker's address to the
// training processes by rewriting data.kafka.bootstrap_servers in the job they receive. Both
// live as long as this object, i.e. as long as `trib train`.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "trib/config/job_config.h"

namespace trib::stream {
class MockBroker;
}

namespace trib::app {

class BuiltinStream {
 public:
  // Does nothing unless `job` is a stream job without a broker; else starts both and
  // rewrites job.data.kafka.bootstrap_servers and job.resolved_yaml.
  explicit BuiltinStream(config::JobConfig& job);
  // Stops the generator, then the broker.
  ~BuiltinStream();
  BuiltinStream(const BuiltinStream&) = delete;
  BuiltinStream& operator=(const BuiltinStream&) = delete;

 private:
  std::unique_ptr<stream::MockBroker> broker_;
  std::atomic<bool> stop_{false};
  std::thread generator_;
};

}  // namespace trib::app
