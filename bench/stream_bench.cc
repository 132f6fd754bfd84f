// Streaming ingest beside kcat, in the same run on the same built-in broker:
//   bench=stream events=N partitions=P batch=B ours_events_per_s=N peer=kcat peer_events_per_s=N ratio=R
//   bench=stream_freshness rate=R events=N p50_ms=N p99_ms=N
//
// Both run the real trainer (train::train on examples/stream_fraud.yaml, one local process,
// 1 intra-op thread): Kafka source, JSON decoding, shuffle buffer, log1p, batching, the MLP's
// forward and backward pass and the Adam update, prequential scoring.
// Ingest: N fraud events are produced into a topic first; the trainer reads them all in a
// fresh consumer group. Its rate is timed from its first update to the update that used the
// last event (the group join before, and the idle wait that ends the stream after, are not
// training), except the last shuffle window, which waits for the stream to go idle.
// `kcat -C -e -o beginning -q` reads the same topic raw, timed from its first line out to its
// last: the client library's ceiling on this machine.
// Freshness: events produced at --rate for --seconds while the trainer runs (batch 64, the
// example's shuffle buffer); freshness is the time from an event's timestamp to the update
// that used it, over the 10,000 events (the trainer's prequential window) before its last
// report ahead of the stream's end: the start, while the group joins, and the tail, which
// waits for the stream to go idle, are left out.
//
//   stream_bench [--events 150000] [--partitions 8] [--batch 256] [--rate 2000] [--seconds 10]
//                [--no-peer]
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

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "trib/config/job_config.h"
#include "trib/stream/event_generator.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/kafka_producer.h"
#include "trib/stream/kafka_source.h"
#include "trib/stream/mock_broker.h"
#include "trib/train_stream/stream_trainer.h"

using namespace trib::stream;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::int64_t events = 150'000;
  int partitions = 8;
  std::int64_t batch = 256;
  double rate = 2000;
  double seconds = 10;
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

namespace fs = std::filesystem;

// The example's job as one local process on `topic`, ending 2 s after the last event.
trib::config::JobConfig job_for(const std::string& bootstrap, const std::string& topic, std::int64_t batch,
                                std::int64_t report_every = 100000) {
  return trib::config::load_job_config(
      std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml",
      {"cluster=null", "strategy.name=local", "data.kafka.bootstrap_servers=\"" + bootstrap + "\"",
       "data.kafka.topic=" + topic, "data.kafka.group_id=" + topic + ".bench", "data.kafka.idle_timeout_s=2",
       "training.steps=0", "training.batch=" + std::to_string(batch), "training.eval_every=" + std::to_string(report_every),
       "training.checkpoint_every=100000000", "threads.intra=1", "threads.inter=1"});
}

struct Trained {
  std::int64_t events = 0;            // trained on
  double first_s = 0, last_s = 0;     // since train() was called: the first and the last update
  std::int64_t timed_events = 0;      // trained on between the first update and timed_s
  double timed_s = 0;                 // the first update with `timed_until` events trained
  fs::path run_dir;
};

// timed_until: the events after which the clock stops (the stream's tail waits in the shuffle
// buffer until the stream goes idle, which is not training time).
Trained train_on(const trib::config::JobConfig& job, const std::string& name, std::int64_t timed_until = 0) {
  Trained t;
  t.run_dir = fs::temp_directory_path() / fmt::format("trib_stream_bench_{}_{}", name, ::getpid());
  fs::remove_all(t.run_dir);
  trib::train::TrainerOptions options;
  options.job = job;
  options.output = t.run_dir;
  options.log = stderr;
  const auto start = Clock::now();
  options.on_step = [&](std::int64_t step, double) {
    const double now = since(start);
    if (step == 1) t.first_s = now;
    t.last_s = now;
    t.events = step * job.training.batch;
    if (t.timed_s == 0 && timed_until > 0 && t.events >= timed_until) {
      t.timed_s = now;
      t.timed_events = t.events - job.training.batch;  // the first batch's update starts the clock
    }
  };
  trib::train_stream::train(options);
  return t;
}

// Events/s our trainer decodes and trains on, reading the whole topic from the beginning.
// The clock runs from the first update to the one that used the last event not held in the
// final shuffle window.
double ours(const std::string& bootstrap, const std::string& topic, const Options& o) {
  trib::config::JobConfig job = job_for(bootstrap, topic, o.batch);
  const std::int64_t tail = job.data.kafka.shuffle_buffer + o.batch;
  if (o.events <= 4 * tail) {
    fmt::print(stderr, "stream_bench: --events {} is too few to time (need > {})\n", o.events, 4 * tail);
    std::exit(2);
  }
  Trained t = train_on(job, "ingest", o.events - tail);
  fs::remove_all(t.run_dir);
  if (t.events + o.batch <= o.events)
    fmt::print(stderr, "stream_bench: the trainer went idle after {} of {} events\n", t.events, o.events);
  fmt::print(stderr, "stream_bench: trained on {} events; {} timed in {:.3f} s\n", t.events, t.timed_events,
             t.timed_s - t.first_s);
  return t.timed_s > t.first_s ? static_cast<double>(t.timed_events) / (t.timed_s - t.first_s) : 0.0;
}

// Events/s kcat reads the topic at, raw, from its first line out to its last (as for ours,
// start-up is not timed; the first read's lines start the clock).
double peer(const std::string& bootstrap, const std::string& topic, std::int64_t events) {
  const std::string command = fmt::format("kcat -C -b {} -t {} -e -o beginning -q 2>/dev/null", bootstrap, topic);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return 0;
  std::vector<char> buffer(1 << 16);
  std::int64_t lines = 0, first_lines = -1;
  Clock::time_point first, last;
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0;) {
    lines += std::count(buffer.data(), buffer.data() + n, '\n');
    last = Clock::now();
    if (first_lines < 0) first_lines = lines, first = last;
  }
  pipe.reset();
  if (lines != events) fmt::print(stderr, "stream_bench: kcat read {} of {} events\n", lines, events);
  const double seconds = std::chrono::duration<double>(last - first).count();
  fmt::print(stderr, "stream_bench: kcat read {} events; {} timed in {:.3f} s\n", lines, lines - first_lines, seconds);
  return seconds > 0 ? static_cast<double>(lines - first_lines) / seconds : 0.0;
}

void freshness(MockBroker& broker, const Options& o) {
  broker.create_topic({"fresh", o.partitions});
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
  Trained t;
  try {
    t = train_on(job_for(broker.bootstrap(), "fresh", 64, 50), "fresh");
  } catch (...) {
    stop = true;
    producer.join();
    throw;
  }
  producer.join();
  // The last report before the final one (which comes after the stream went idle, when the
  // tail window waited for the end): its freshness covers the 10,000 events before it.
  std::vector<nlohmann::json> reports;
  std::ifstream in(t.run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("freshness_p99_ms")) reports.push_back(std::move(j));
  }
  nlohmann::json last = reports.size() >= 2 ? reports[reports.size() - 2] : nlohmann::json();
  fs::remove_all(t.run_dir);
  if (last.is_null() || last["freshness_p99_ms"].is_null()) {
    fmt::print(stderr, "stream_bench: the freshness run recorded no freshness\n");
    return;
  }
  fmt::print(stderr, "stream_bench: freshness of {} events produced at {} events/s on {} partitions, batch 64\n",
             t.events, o.rate, o.partitions);
  fmt::print("bench=stream_freshness rate={:.0f} events={} p50_ms={:.0f} p99_ms={:.0f}\n", o.rate, t.events,
             last["freshness_p50_ms"].get<double>(), last["freshness_p99_ms"].get<double>());
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
      fmt::print("bench=stream events={} partitions={} batch={} ours_events_per_s={:.0f} peer=kcat "
                 "peer_events_per_s={:.0f} ratio={:.2f}\n",
                 o.events, o.partitions, o.batch, our_rate, peer_rate, peer_rate > 0 ? our_rate / peer_rate : 0.0);
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
