// `trib produce`: synthetic card transactions into a topic, from the event generator.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "app/commands.h"
#include "trib/core/error.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/mock_broker.h"
#include "stream/stop_signal.h"

namespace trib::app {

int run_produce(const ProduceArgs& args) {
  TRIB_CHECK(args.bootstrap.empty() || args.partitions < 0, InvalidArgument,
             "--partitions sets up the built-in broker's topic; with --bootstrap {}, create the topic on that cluster",
             args.bootstrap);
  stream::StopOnSignal stop;  // before any client thread starts

  stream::ProduceOptions o;
  o.kafka.bootstrap_servers = args.bootstrap;
  o.topic = args.topic;
  o.format = stream::parse_record_format(args.format);
  o.key = args.key;
  o.rate = args.rate;
  o.count = args.count;
  o.duration_s = args.duration;
  o.generator.seed = args.seed;
  o.generator.drift_after_seconds = args.drift_after;
  o.generator.drift_after_events = args.drift_after_events;

  std::unique_ptr<stream::MockBroker> builtin;
  if (args.bootstrap.empty()) {
    builtin = std::make_unique<stream::MockBroker>(
        stream::MockBrokerOptions{.brokers = 1, .topics = {{args.topic, args.partitions < 0 ? 4 : args.partitions}}});
    o.kafka.bootstrap_servers = builtin->bootstrap();
    fmt::print("bootstrap={}\n", builtin->bootstrap());
    std::fflush(stdout);
  }
  auto progress = [](const stream::ProduceReport& r) {
    const double fraud = static_cast<double>(r.fraud) / static_cast<double>(std::max<std::int64_t>(r.produced, 1));
    fmt::print(stderr, "trib produce: {} events ({} delivered) in {:.0f} s, {:.1f}% fraud{}\n", r.produced,
               r.delivered, r.seconds, 100.0 * fraud,
               r.drift_at >= 0 ? fmt::format(", drifted at id {}", r.drift_at) : "");
  };
  const stream::ProduceReport r = stream::produce_events(o, stop.flag(), progress);
  fmt::print("produced={} delivered={} failed={} fraud={} drift_at={} seconds={:.2f}\n", r.produced, r.delivered,
             r.failed, r.fraud, r.drift_at, r.seconds);
  std::fflush(stdout);
  if (r.failed > 0) fmt::print(stderr, "trib produce: {} events not delivered: {}\n", r.failed, r.last_error);
  if (builtin && !stop.stopped()) {
    fmt::print(stderr, "trib produce: the built-in broker stays up at {} for consumers; Ctrl-C stops it\n",
               builtin->bootstrap());
    while (!stop.wait_for(std::chrono::hours(1))) {
    }
  }
  return r.failed > 0 ? 1 : 0;
}

}  // namespace trib::app
