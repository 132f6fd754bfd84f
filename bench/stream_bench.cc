// Streaming ingest beside kcat, in the same run on the same built-in broker:
//   bench=stream events=N partitions=P ours_events_per_s=N peer=kcat peer_events_per_s=N ratio=R
//   bench=stream_freshness rate=R p50_ms=N p99_ms=N
//
// Ingest: N fraud events (JSON) are produced into a topic, then (a) a KafkaSource in a fresh
// consumer group decodes them into batches of --batch rows (decode only: no training step),
// timed from the group's assignment to the last event; (b) `kcat -C -e -o beginning -q` reads
// the same topic raw, timed as a whole process: the client library's ceiling on this machine.
// Freshness: events produced at --rate for --seconds while a source (joined beforehand) hands
// them out; freshness = time a record is handed out in a batch - its event timestamp (with no
// training step, that is when the update would start).
//
//   stream_bench [--events 150000] [--partitions 8] [--batch 256] [--rate 2000] [--seconds 5]
//                [--merge-grace 200] [--no-peer]
// Only bench= lines go to stdout; progress and notes go to stderr.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "trib/stream/event_generator.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/kafka_producer.h"
#include "trib/stream/kafka_source.h"
#include "trib/stream/mock_broker.h"

using namespace trib::stream;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::int64_t events = 150'000;
  int partitions = 8;
  std::int64_t batch = 256;
  double rate = 2000;
  double seconds = 5;
  std::int64_t merge_grace_ms = 200;
  bool peer = true;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "stream_bench: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--events") o.events = std::stoll(value());
    else if (a == "--partitions") o.partitions = std::stoi(value());
    else if (a == "--batch") o.batch = std::stoll(value());
    else if (a == "--rate") o.rate = std::stod(value());
    else if (a == "--seconds") o.seconds = std::stod(value());
    else if (a == "--merge-grace") o.merge_grace_ms = std::stoll(value());
    else if (a == "--no-peer") o.peer = false;
    else {
      fmt::print(stderr, "stream_bench: unknown argument '{}'\n", a);
      std::exit(2);
    }
  }
  if (o.events < 1 || o.partitions < 1 || o.batch < 1 || o.rate <= 0 || o.seconds <= 0) {
    fmt::print(stderr, "stream_bench: --events, --partitions, --batch, --rate and --seconds must be positive\n");
    std::exit(2);
  }
  return o;
}

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

KafkaSourceOptions source_options(const std::string& bootstrap, const std::string& topic, std::int64_t grace_ms) {
  KafkaSourceOptions o;
  o.merge_grace = std::chrono::milliseconds(grace_ms);
  o.kafka.bootstrap_servers = bootstrap;
  o.topic = topic;
  o.group_id = topic + ".bench";
  o.schema = EventGenerator::schema(RecordFormat::json);
  o.idle_end = std::chrono::seconds(2);
  return o;
}

// Events/s our source decodes into batches, reading the whole topic from the beginning.
double ours(const std::string& bootstrap, const std::string& topic, const Options& o) {
  const std::int64_t events = o.events;
  KafkaSource source(source_options(bootstrap, topic, o.merge_grace_ms));  // returns once the group has assigned
  const auto start = Clock::now();
  std::int64_t seen = 0;
  while (seen < events) {
    auto b = source.next(o.batch);
    if (!b) {
      fmt::print(stderr, "stream_bench: our source went idle after {} of {} events\n", seen, events);
      break;
    }
    seen += b->rows();
  }
  return static_cast<double>(seen) / since(start);
}

// Events/s kcat reads the topic at, raw, as one process (start-up included).
double peer(const std::string& bootstrap, const std::string& topic, std::int64_t events) {
  const std::string command = fmt::format("kcat -C -b {} -t {} -e -o beginning -q 2>/dev/null", bootstrap, topic);
  const auto start = Clock::now();
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return 0;
  std::vector<char> buffer(1 << 20);
  std::int64_t lines = 0;
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0;)
    lines += std::count(buffer.data(), buffer.data() + n, '\n');
  pipe.reset();
  const double seconds = since(start);
  if (lines != events) fmt::print(stderr, "stream_bench: kcat read {} of {} events\n", lines, events);
  return static_cast<double>(lines) / seconds;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::size_t rank = static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(v.size())))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank), v.end());
  return v[rank];
}

void freshness(MockBroker& broker, const Options& o) {
  broker.create_topic({"fresh", o.partitions});
  KafkaSource source(source_options(broker.bootstrap(), "fresh", o.merge_grace_ms));  // joined before any event exists
  std::atomic<bool> stop{false};
  ProduceReport report;
  std::thread producer([&] {
    ProduceOptions p;
    p.kafka.bootstrap_servers = broker.bootstrap();
    p.topic = "fresh";
    p.key = "id";
    p.rate = o.rate;
    p.duration_s = o.seconds;
    report = produce_events(p, stop);
  });
  std::vector<double> fresh_ms;
  const auto deadline = Clock::now() + std::chrono::duration<double>(o.seconds + 10);
  const auto wall_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  for (;;) {
    auto b = source.next(o.batch);
    if (b) {
      const std::int64_t now = wall_ms();
      for (std::int64_t t : b->get(KafkaSource::kEventTime).span<std::int64_t>())
        fresh_ms.push_back(static_cast<double>(now - t));
    }
    if (report.delivered > 0 && static_cast<std::int64_t>(fresh_ms.size()) >= report.produced) break;
    if (Clock::now() > deadline) break;
  }
  producer.join();
  fmt::print(stderr, "stream_bench: freshness over {} events at {} events/s on {} partitions (merge grace {} ms)\n",
             fresh_ms.size(), o.rate, o.partitions, source.options().merge_grace.count());
  fmt::print("bench=stream_freshness rate={:.0f} p50_ms={:.0f} p99_ms={:.0f}\n", o.rate, percentile(fresh_ms, 0.5),
             percentile(fresh_ms, 0.99));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    MockBroker broker({.brokers = 1, .topics = {{"ingest", o.partitions}}});
    {
      KafkaConfig config;
      config.bootstrap_servers = broker.bootstrap();
      KafkaProducer producer(config);
      EventGenerator generator({.seed = 1});
      const auto start = Clock::now();
      for (std::int64_t i = 0; i < o.events; ++i) {
        FraudEvent e = generator.next(1'700'000'000'000 + i);
        producer.produce("ingest", std::to_string(e.id), EventGenerator::encode(e, RecordFormat::json), e.timestamp_ms);
      }
      producer.flush(std::chrono::seconds(60));
      fmt::print(stderr, "stream_bench: produced {} events into {} partitions in {:.2f} s\n", o.events, o.partitions,
                 since(start));
    }
    const double our_rate = ours(broker.bootstrap(), "ingest", o);
    if (o.peer && std::system("command -v kcat > /dev/null 2>&1") == 0) {
      const double peer_rate = peer(broker.bootstrap(), "ingest", o.events);
      fmt::print("bench=stream events={} partitions={} ours_events_per_s={:.0f} peer=kcat peer_events_per_s={:.0f} "
                 "ratio={:.2f}\n",
                 o.events, o.partitions, our_rate, peer_rate, peer_rate > 0 ? our_rate / peer_rate : 0.0);
    } else {
      fmt::print(stderr, "stream_bench: kcat not run (--no-peer, or not installed: apt-get install kcat)\n");
      fmt::print("bench=stream events={} partitions={} ours_events_per_s={:.0f} peer=none\n", o.events,
                 o.partitions, our_rate);
    }
    freshness(broker, o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "stream_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
