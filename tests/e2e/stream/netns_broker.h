// The multi-host stream tests' broker: `trib broker` (librdkafka's mock cluster) on host 0 of a
// NamespaceLab, reached from every other host at the address it advertises, 127.0.0.1:PORT,
// through NAT to host 0 (NamespaceLab::share_loopback_port): the workers' Kafka traffic
// crosses the links. docs/fault_tolerance.md, "Allreduce stream jobs across hosts".
#pragma once

#include <memory>
#include <string>

#include "e2e/namespace_lab.h"
#include "e2e/trib_process.h"

namespace trib::testing {

struct SharedBroker {
  std::unique_ptr<Trib> process;
  std::string bootstrap;  // 127.0.0.1:PORT, the same on every host
  int port = 0;
  std::string failure;  // the broker did not start: the test fails with this
  std::string skip;     // the lab cannot carry its port across: the test skips with this
};

// A topic "transactions" of 6 partitions.
inline SharedBroker start_shared_broker(NamespaceLab& lab) {
  SharedBroker b;
  b.process = std::make_unique<Trib>("broker", std::vector<std::string>{"broker", "--topics", "transactions",
                                                                        "--partitions", "6"},
                                     lab.exec_in(0));
  Trib& broker = *b.process;
  if (!wait_until({&broker}, [&] { return broker.printed("bootstrap="); }, std::chrono::seconds(20))) {
    b.failure = "the broker printed no bootstrap= line:\n" + broker.output();
    return b;
  }
  b.bootstrap = broker.find(R"(bootstrap=(127\.0\.0\.1:[0-9]+))");
  if (b.bootstrap.empty()) {
    b.failure = "the broker's bootstrap is not on 127.0.0.1:\n" + broker.output();
    return b;
  }
  b.port = std::stoi(b.bootstrap.substr(b.bootstrap.find(':') + 1));
  if (std::string why = lab.share_loopback_port(0, b.port); !why.empty())
    b.skip = "the broker cannot be reached across the namespaces: " + why;
  return b;
}

}  // namespace trib::testing
