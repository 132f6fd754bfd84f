// A training job as described by a YAML file: model, data, optimizer, schedule, training
// loop and threads (and, from later sections, the cluster). Loading is strict: an unknown key
// is an error naming it and suggesting the nearest valid one.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "trib/config/stream_config.h"
#include "trib/config/strategy_config.h"
#include "trib/net/host_port.h"
#include "trib/nn/layers.h"
#include "trib/nn/sequential.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"

namespace trib::config {

struct LayerConfig {
  std::string type;  // dense, conv2d, max_pool2d, avg_pool2d, flatten, dropout, batch_norm,
                     // embedding, activation
  std::string name;
  nn::DenseOptions dense;
  nn::Conv2DOptions conv;
  int pool_size = 2, pool_stride = 0;
  float rate = 0.0f;                 // dropout
  float momentum = 0.9f, epsilon = 1e-5f;  // batch_norm
  std::int64_t vocabulary = 0, dim = 0;    // embedding
  nn::Activation activation = nn::Activation::none;  // activation layer
  int stage = -1;  // strategy pipeline: the stage this layer runs in, set by hand; -1: the planner's
};

struct ModelConfig {
  std::vector<std::int64_t> input;  // one example's shape, e.g. [1, 28, 28]
  std::int64_t classes = 0;
  std::vector<LayerConfig> layers;
};

struct DataSplitConfig {
  std::string images, labels;  // idx
  std::string path;            // csv
};

struct DataConfig {
  // idx | csv | kafka (a stream: no train/test splits) | python (batches handed over by the
  // program running the job, the Python API's Model.fit: no files)
  std::string format = "idx";
  DataSplitConfig train, test;
  std::string label_column = "label";  // csv
  bool header = true;                  // csv
  int num_classes = 0;                 // label range check (defaults to model.classes)
  float scale = 1.0f / 255.0f;         // idx: pixels are multiplied by this
  // A new permutation of the training split every epoch (training.seed); false: the file's
  // order, batch k of an epoch being examples [k*b, (k+1)*b). Streams: the shuffle buffer.
  bool shuffle = true;
  int prefetch = 2;
  // How a cluster's workers share the training split: "shards" (each worker its fixed equal
  // shard) or "dynamic" (parameter server 0 hands out chunks of each epoch to the workers
  // present, so a lost, leaving or joining worker changes who reads what; parameter-server
  // jobs only: docs/fault_tolerance.md).
  std::string assignment = "shards";
  std::int64_t train_subset = 0;  // use only the first N training examples (0: all)
  std::int64_t test_subset = 0;
  // idx: keep a decoded copy of each image/label pair in cache_dir ("": the user's cache
  // directory), checked against its sources before each use (src/train/idx_cache.h).
  bool cache = true;
  std::string cache_dir;
  // format kafka: data.kafka, data.schema, data.generator (see stream_config.h).
  KafkaDataConfig kafka;
  SchemaDataConfig schema;
  GeneratorConfig generator;
  bool stream() const { return format == "kafka"; }
  bool external() const { return format == "python"; }
};

struct TrainingConfig {
  double epochs = 1;             // used when steps is 0
  std::int64_t steps = 0;
  std::int64_t batch = 64;
  std::int64_t eval_batch = 1000;
  std::int64_t eval_every = 0;   // steps between evaluations; 0: once per epoch
  std::int64_t checkpoint_every = 0;  // steps; 0: at every evaluation
  int keep_checkpoints = 3;
  std::uint64_t seed = 1;
  double clip_norm = 0;          // gradient clipping by global norm; 0: off
  bool train_metrics = true;     // evaluate on the training split too (on up to 10k examples)
  // Steps between per-step rows (loss, lr, images/s, gradient norm) in metrics.jsonl and
  // the tfevents file, from every worker; 0: none.
  std::int64_t log_every = 0;
};

struct ThreadsConfig {
  int intra = 0;  // 0: one per core
  int inter = 1;
};

// A static cluster spec: every role's address written down in the job, for clusters whose
// hosts are known in advance. Indices are still handed out by the coordinator in join
// order; role i listens on the port of entry i, so firewalls can be opened per port.
// Each address is checked when the job is read (trib/net/host_port.h).
struct ClusterSpec {
  net::HostPort coordinator;
  std::vector<net::HostPort> ps, workers;
};

// Where the job's processes run. Absent from the file: one process, no cluster.
struct ClusterConfig {
  bool enabled = false;
  int ps = 0;       // parameter servers (0 under a strategy other than ps: see ignored_ps)
  int workers = 1;
  // cluster.ps as given under strategy allreduce or local, which talk to no server: parsing
  // sets ps to 0 (none is started or waited for) and keeps the given count here, for the
  // launchers' one-line note. A config switched from ps (--set strategy.name=allreduce) then
  // runs as written for its new strategy.
  int ignored_ps = 0;
  // Workers a parameter-server job admits while it runs (`trib worker --join` without an
  // index takes the next free one); at least `workers`. Parsing leaves it 0 when absent,
  // which means `workers` (max_workers_or_default()).
  int max_workers = 0;
  int max_workers_or_default() const { return max_workers > 0 ? max_workers : workers; }
  // Where the coordinator listens (port 0: any free port, for a local cluster). With a spec,
  // spec.coordinator.
  std::string coordinator = "127.0.0.1:0";
  // cluster.spec: when present, ps and workers are the lengths of its lists.
  bool has_spec = false;
  ClusterSpec spec;
  // Servers bind here (--bind overrides it); empty: each role binds to the address of its
  // interface that reaches the coordinator (127.0.0.1 for a local cluster).
  std::string bind_host;
  int heartbeat_ms = 1000;
  int peer_timeout_ms = 5000;  // a silent peer is declared dead after this
  int join_timeout_s = 60;     // how long roles wait for each other at start
  // A local cluster relaunches a lost process (killed by a signal) up to this many times
  // per role; 0: a lost process stops the job.
  int max_restarts = 3;
  // An allreduce stream job (data.stream) relaunches a lost worker other than the chief (under
  // max_restarts) and takes it back into its running group, which rolls back to its newest
  // checkpoint (docs/fault_tolerance.md); off: the job goes on with N-1.
  bool stream_rejoin = true;
  // After SIGTERM (preemption), how long the job has to reach a step boundary, write its
  // checkpoint and exit before the launcher kills what is left.
  int preemption_grace_s = 25;
  // How long a member goes on without its coordinator (training against the servers and
  // peers it knows, reconnecting with backoff) before it gives up and exits.
  int coordinator_timeout_s = 300;
  // Where rendezvous and membership live: "" for the coordinator's built-in store, or
  // "etcd://h1:2379,h2:2379,h3:2379" for an etcd cluster that outlives any one machine.
  std::string store;
};

// security: how the cluster's links are protected (docs/wire_protocol.md).
struct SecurityConfig {
  // Frames are encrypted (AES-256-GCM); false: only authenticated, for trusted links.
  bool encryption = true;
};

// monitoring: each role's Prometheus endpoint and the launcher's dashboard
// (docs/monitoring.md). Off unless a port is set.
struct MonitoringConfig {
  // The base port (0: off): the launcher or coordinator listens on it, parameter server i
  // on port + 1 + i, worker i on port + 1 + ps + i (monitor/metrics_server.h role_port).
  int port = 0;
  std::string bind = "127.0.0.1";  // loopback unless told otherwise
  std::string token_file;          // a file holding a bearer token every request must carry
  // The chief writes scalars (per-step rows, evaluations) to a tfevents file in the run
  // directory for TensorBoard; independent of `port`.
  bool tensorboard = true;
  bool enabled() const { return port > 0; }
};

struct JobConfig {
  std::string name = "job";
  std::string source_file;
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  // schedule.base_lr is the file's optimizer.lr: optimizers take their rate from the schedule
  // at every step. schedule.linear_scaling defaults to off, except under strategy allreduce
  // with several workers, where it, a 100-step warm-up and a warm-up from the single-worker
  // rate are the strategy's defaults for whichever of those keys the file leaves out
  // (config/derived_settings.h).
  ScheduleConfig schedule;
  TrainingConfig training;
  ThreadsConfig threads;
  ClusterConfig cluster;
  StrategyConfig strategy;
  SecurityConfig security;
  MonitoringConfig monitoring;
  // The configuration after overrides, as the roles of a cluster receive it (secrets
  // included: on the wire it is encrypted).
  std::string resolved_yaml;
  // The dotted keys the file (after overrides) sets, e.g. "schedule.linear_scaling": a
  // derived default applies only where the job left the key out.
  std::set<std::string> given;
  bool has(const std::string& dotted_key) const { return given.count(dotted_key) > 0; }
};

// Reads and validates a job file, applying "key.path=value" overrides first. Throws
// InvalidArgument (bad key or value) or NotFound (missing file), naming the file and key.
JobConfig load_job_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from YAML text (for tests); `origin` names it in errors. `keys_read`, when given,
// receives the path of every key the parser asked for ("model.layers[].units"), set or not:
// what docs/config.md must document.
JobConfig parse_job_config(const std::string& yaml_text, const std::string& origin,
                           const std::vector<std::string>& overrides = {}, std::set<std::string>* keys_read = nullptr);

// `resolved_yaml` as the run directory's config.yaml keeps it: the values of credentials
// (data.kafka.properties whose key names a password, secret, token, key or JAAS config)
// replaced by "<redacted>", so that a run directory can be shared without them.
std::string redact_secrets(const std::string& resolved_yaml);

// The model as layers; checks every layer's settings.
std::shared_ptr<nn::Sequential> build_model(const ModelConfig& model);

}  // namespace trib::config
