// The streaming parts of a job's data section (data.format: kafka): where the events come
// from (data.kafka), what a record looks like (data.schema) and, when no broker is given, the
// built-in broker's event generator (data.generator). Plain settings: trib_stream turns them
// into its own options, so the config library needs no Kafka client.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trib::config {

class ConfigReader;

struct KafkaDataConfig {
  // "host:port[,...]"; empty: `trib train` starts a built-in broker and an event generator and
  // hands its address to every role (see data.generator).
  std::string bootstrap_servers;
  std::string topic = "transactions";
  std::string group_id;  // empty: "trib-<job name>"
  // librdkafka settings passed as they are (security.protocol, sasl.*, ssl.*, ...).
  std::map<std::string, std::string> properties;
  std::int64_t shuffle_buffer = 4096;  // records; 0: no shuffle buffer
  int connect_timeout_s = 10;          // an unreachable broker is reported after this
  // A worker ends its run after this long without a record (the producer stopped); 0: it waits
  // for records until training.steps.
  double idle_timeout_s = 0;
  // Who decides which worker reads which partition: "group" (Kafka's consumer group: members
  // subscribe, rebalances move partitions), "job" (the job's own membership: worker i of n
  // reads the partitions p with p % n == i, reassigned at the job's regroups, with no
  // rebalances), or "auto": job for strategy allreduce, whose members re-form in lockstep and
  // roll back together, group otherwise (a lost parameter-server worker's partitions are
  // moved by the group with their hand-over commits). See docs/streaming.md.
  std::string assignment = "auto";
  // Allreduce: every step the workers also exchange where their data stands (a few KB each),
  // so that a group that loses a worker goes on from the step it rolls back to, with every
  // member's Kafka progress of that step (the lost one's included). False: no exchange, and
  // such a group rolls back to the newest checkpoint. See docs/fault_tolerance.md.
  bool share_cursors = true;
  // Debug/test hook: each worker appends "step id id ..." per applied step to
  // <run>/stream_ids/worker-<index>.txt (needs schema.id_field).
  bool record_ids = false;
};

struct SchemaDataConfig {
  std::string format = "json";             // json | csv
  std::vector<std::string> features;       // in feature-vector order
  std::string label = "label";
  std::string id_field;                    // optional integer id
  std::vector<std::string> csv_columns;    // csv: every column, in order
  // Features read through sign(x) * log(1 + |x|): raw amounts and distances span decades.
  std::vector<std::string> log1p;
};

// The built-in broker's event generator (EventGenerator's fraud transactions).
struct GeneratorConfig {
  double rate = 2000;          // events/s
  double duration_s = -1;      // stop producing after this long; negative: until the job ends
  std::int64_t count = -1;     // stop after this many events; negative: no limit
  double drift_after_s = -1;   // the hidden rule changes after this much event time
  int partitions = 4;
  std::uint64_t seed = 1;
};

// Reads data.kafka, data.schema and data.generator (strictly; errors name the key).
void read_stream_data(ConfigReader& data, KafkaDataConfig& kafka, SchemaDataConfig& schema,
                      GeneratorConfig& generator);

}  // namespace trib::config
