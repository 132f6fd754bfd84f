// `trib broker`: the built-in Kafka broker on its own, for kcat and other clients.
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/commands.h"
#include "trib/stream/mock_broker.h"
#include "stream/stop_signal.h"

namespace trib::app {

int run_broker(const BrokerArgs& args) {
  // Before the broker's threads start, so that they inherit the blocked signals.
  stream::StopOnSignal stop;
  stream::MockBrokerOptions options;
  options.brokers = args.brokers;
  for (const std::string& name : args.topics) options.topics.push_back({name, args.partitions});
  stream::MockBroker broker(options);
  // One machine-readable line on stdout; the rest goes to stderr.
  fmt::print("bootstrap={}\n", broker.bootstrap());
  std::fflush(stdout);
  fmt::print(stderr, "trib broker: built-in Kafka broker at {} with topics {} ({} partitions each); Ctrl-C stops it\n",
             broker.bootstrap(), fmt::join(args.topics, ", "), args.partitions);
  while (!stop.wait_for(std::chrono::hours(1))) {
  }
  fmt::print(stderr, "trib broker: stopped\n");
  return 0;
}

}  // namespace trib::app
