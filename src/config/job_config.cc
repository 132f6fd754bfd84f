#include "trib/config/job_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "config/config_reader.h"
#include "config/section_readers.h"
#include "trib/cluster/etcd_url.h"

#include <fmt/ranges.h>

namespace trib::config {
namespace {

LayerConfig read_layer(ConfigReader& r) {
  LayerConfig l;
  l.type = r.required<std::string>("type");
  l.name = r.get<std::string>("name", "");
  l.stage = r.get<int>("stage", l.stage);
  TRIB_CHECK(l.stage >= -1, InvalidArgument, "config {}: {} must be a stage index (0 or more), got {}", r.file(),
             r.where("stage"), l.stage);
  const std::string& t = l.type;
  if (t == "dense") {
    l.dense.units = r.required<std::int64_t>("units");
    l.dense.activation = nn::parse_activation(r.get<std::string>("activation", "none"));
    l.dense.kernel_init = nn::Initializer::parse(r.get<std::string>("init", "glorot_uniform"));
    l.dense.use_bias = r.get<bool>("bias", true);
    l.dense.l2 = r.get<float>("l2", 0.0f);
  } else if (t == "conv2d") {
    l.conv.filters = r.required<std::int64_t>("filters");
    l.conv.kernel = r.get<int>("kernel", 3);
    l.conv.stride = r.get<int>("stride", 1);
    std::string pad = r.get<std::string>("padding", "same");
    if (pad == "same") l.conv.padding = -1;
    else if (pad == "valid") l.conv.padding = 0;
    else l.conv.padding = r.get<int>("padding", 0);
    l.conv.activation = nn::parse_activation(r.get<std::string>("activation", "none"));
    l.conv.kernel_init = nn::Initializer::parse(r.get<std::string>("init", "he_uniform"));
    l.conv.use_bias = r.get<bool>("bias", true);
    l.conv.l2 = r.get<float>("l2", 0.0f);
  } else if (t == "max_pool2d" || t == "avg_pool2d") {
    l.pool_size = r.get<int>("size", 2);
    l.pool_stride = r.get<int>("stride", 0);
  } else if (t == "flatten") {
  } else if (t == "dropout") {
    l.rate = r.required<float>("rate");
  } else if (t == "batch_norm") {
    l.momentum = r.get<float>("momentum", 0.9f);
    l.epsilon = r.get<float>("epsilon", 1e-5f);
  } else if (t == "embedding") {
    l.vocabulary = r.required<std::int64_t>("vocabulary");
    l.dim = r.required<std::int64_t>("dim");
  } else if (t == "activation") {
    l.activation = nn::parse_activation(r.required<std::string>("activation"));
  } else {
    throw InvalidArgument(fmt::format(
        "config {}: {} '{}' is not a layer type: expected dense, conv2d, max_pool2d, avg_pool2d, "
        "flatten, dropout, batch_norm, embedding or activation",
        r.file(), r.where("type"), t));
  }
  r.finish();
  return l;
}

ModelConfig read_model(ConfigReader r) {
  ModelConfig m;
  m.input = r.get_list<std::int64_t>("input", {});
  TRIB_CHECK(!m.input.empty(), InvalidArgument, "config {}: {} is required (one example's shape, e.g. [1, 28, 28])",
             r.file(), r.where("input"));
  for (std::int64_t d : m.input)
    TRIB_CHECK(d > 0, InvalidArgument, "config {}: {} must be positive dimensions", r.file(), r.where("input"));
  m.classes = r.required<std::int64_t>("classes");
  TRIB_CHECK(m.classes >= 2, InvalidArgument, "config {}: {} must be at least 2", r.file(), r.where("classes"));
  for (ConfigReader& lr : r.list("layers")) m.layers.push_back(read_layer(lr));
  TRIB_CHECK(!m.layers.empty(), InvalidArgument, "config {}: {} must list at least one layer", r.file(),
             r.where("layers"));
  r.finish();
  return m;
}

DataConfig read_data(ConfigReader r) {
  DataConfig d;
  d.format = r.get<std::string>("format", "idx");
  if (d.stream()) {  // events from a topic: no files, no splits
    read_stream_data(r, d.kafka, d.schema, d.generator);
    d.shuffle = r.get<bool>("shuffle", d.kafka.shuffle_buffer > 0);
    d.prefetch = r.get<int>("prefetch", 2);
    r.finish();
    return d;
  }
  if (d.format == "python") {  // batches from the program that runs the job: no files
    d.shuffle = r.get<bool>("shuffle", true);
    d.prefetch = r.get<int>("prefetch", 2);
    r.finish();
    return d;
  }
  auto split = [&](const std::string& key) {
    DataSplitConfig s;
    ConfigReader c = r.child(key);
    if (d.format == "idx") {
      s.images = c.required<std::string>("images");
      s.labels = c.required<std::string>("labels");
    } else {
      s.path = c.required<std::string>("path");
    }
    c.finish();
    return s;
  };
  TRIB_CHECK(d.format == "idx" || d.format == "csv", InvalidArgument,
             "config {}: {} '{}' is not supported: expected idx, csv, kafka or python", r.file(), r.where("format"), d.format);
  d.train = split("train");
  d.test = split("test");
  if (d.format == "csv") {
    d.label_column = r.get<std::string>("label_column", "label");
    d.header = r.get<bool>("header", true);
  } else {
    d.cache = r.get<bool>("cache", d.cache);
    d.cache_dir = r.get<std::string>("cache_dir", d.cache_dir);
  }
  d.num_classes = r.get<int>("num_classes", 0);
  d.scale = r.get<float>("scale", d.format == "idx" ? 1.0f / 255.0f : 1.0f);
  d.shuffle = r.get<bool>("shuffle", true);
  d.prefetch = r.get<int>("prefetch", 2);
  d.assignment = r.get<std::string>("assignment", d.assignment);
  TRIB_CHECK(d.assignment == "shards" || d.assignment == "dynamic", InvalidArgument,
             "config {}: {} is '{}', expected shards or dynamic", r.file(), r.where("assignment"), d.assignment);
  d.train_subset = r.get<std::int64_t>("train_subset", 0);
  d.test_subset = r.get<std::int64_t>("test_subset", 0);
  TRIB_CHECK(d.prefetch >= 0 && d.train_subset >= 0 && d.test_subset >= 0, InvalidArgument,
             "config {}: data.prefetch, data.train_subset and data.test_subset must be >= 0", r.file());
  r.finish();
  return d;
}

// optimizer.lr goes to the schedule (the optimizer takes a rate per step): base_lr.
OptimizerConfig read_optimizer(ConfigReader r, float& base_lr) {
  OptimizerConfig o;
  o.name = r.get<std::string>("name", o.name);
  base_lr = r.get<float>("lr", base_lr);
  if (r.has("momentum")) o.momentum = r.get<float>("momentum", 0.0f);
  o.nesterov = r.get<bool>("nesterov", o.nesterov);
  o.beta1 = r.get<float>("beta1", o.beta1);
  o.beta2 = r.get<float>("beta2", o.beta2);
  if (r.has("eps")) o.eps = r.get<float>("eps", 0.0f);
  if (r.has("weight_decay")) o.weight_decay = r.get<float>("weight_decay", 0.0f);
  o.alpha = r.get<float>("alpha", o.alpha);
  o.centered = r.get<bool>("centered", o.centered);
  o.initial_accumulator = r.get<float>("initial_accumulator", o.initial_accumulator);
  r.finish();
  return o;
}

ScheduleConfig read_schedule(ConfigReader r) {
  ScheduleConfig s;
  s.name = r.get<std::string>("name", s.name);
  s.step_size = r.get<std::int64_t>("step_size", s.step_size);
  s.gamma = r.get<float>("gamma", s.gamma);
  s.decay_steps = r.get<std::int64_t>("decay_steps", s.decay_steps);
  s.total_steps = r.get<std::int64_t>("total_steps", s.total_steps);
  s.min_lr = r.get<float>("min_lr", s.min_lr);
  s.warmup_steps = r.get<std::int64_t>("warmup_steps", s.warmup_steps);
  s.warmup_start_factor = r.get<float>("warmup_start_factor", s.warmup_start_factor);
  s.linear_scaling = r.get<bool>("linear_scaling", s.linear_scaling);
  s.global_batch = r.get<std::int64_t>("global_batch", s.global_batch);
  s.base_batch = r.get<std::int64_t>("base_batch", s.base_batch);
  TRIB_CHECK(s.global_batch >= 0 && s.base_batch >= 0 && s.warmup_steps >= 0 && s.total_steps >= 0, InvalidArgument,
             "config {}: schedule.global_batch, base_batch, warmup_steps and total_steps must be >= 0", r.file());
  r.finish();
  return s;
}

TrainingConfig read_training(ConfigReader r) {
  TrainingConfig t;
  t.epochs = r.get<double>("epochs", t.epochs);
  t.steps = r.get<std::int64_t>("steps", t.steps);
  t.batch = r.get<std::int64_t>("batch", t.batch);
  t.eval_batch = r.get<std::int64_t>("eval_batch", t.eval_batch);
  t.eval_every = r.get<std::int64_t>("eval_every", t.eval_every);
  t.checkpoint_every = r.get<std::int64_t>("checkpoint_every", t.checkpoint_every);
  t.keep_checkpoints = r.get<int>("keep_checkpoints", t.keep_checkpoints);
  t.seed = r.get<std::uint64_t>("seed", t.seed);
  t.clip_norm = r.get<double>("clip_norm", t.clip_norm);
  t.train_metrics = r.get<bool>("train_metrics", t.train_metrics);
  t.log_every = r.get<std::int64_t>("log_every", t.log_every);
  r.finish();
  TRIB_CHECK(t.log_every >= 0, InvalidArgument, "config {}: training.log_every must be >= 0 (0: no per-step rows), got {}",
             r.file(), t.log_every);
  TRIB_CHECK(t.batch > 0 && t.eval_batch > 0, InvalidArgument,
             "config {}: training.batch and training.eval_batch must be positive", r.file());
  TRIB_CHECK(t.steps > 0 || t.epochs > 0, InvalidArgument,
             "config {}: training needs epochs > 0 or steps > 0", r.file());
  TRIB_CHECK(t.steps >= 0 && t.eval_every >= 0 && t.checkpoint_every >= 0 && t.keep_checkpoints >= 1,
             InvalidArgument,
             "config {}: training.steps, eval_every and checkpoint_every must be >= 0 and "
             "keep_checkpoints >= 1",
             r.file());
  return t;
}

// "host:port" or "[v6 address]:port", with a port the other roles can be told in advance.
net::HostPort parse_endpoint(const std::string& text, const std::string& file, const std::string& key) {
  std::string what = fmt::format("config {}: {}", file, key);
  return net::parse_host_port(text, "", net::HostPortRules{true, true, what});
}

// cluster.spec: {coordinator: "h:p", ps: ["h:p", ...], workers: ["h:p", ...]}.
ClusterSpec read_spec(ConfigReader r) {
  ClusterSpec spec;
  spec.coordinator = parse_endpoint(r.required<std::string>("coordinator"), r.file(), r.where("coordinator"));
  // Every address once: two roles cannot listen at one host:port.
  std::map<std::string, std::string> seen{{spec.coordinator.to_string(), r.where("coordinator")}};
  auto read_list = [&](const std::string& key) {
    std::vector<net::HostPort> out;
    std::vector<std::string> texts = r.get_list<std::string>(key, {});
    for (std::size_t i = 0; i < texts.size(); ++i) {
      std::string where = fmt::format("{}[{}]", r.where(key), i);
      net::HostPort e = parse_endpoint(texts[i], r.file(), where);
      std::string canonical = e.to_string();
      std::transform(canonical.begin(), canonical.end(), canonical.begin(), ::tolower);
      auto [it, fresh] = seen.emplace(canonical, where);
      TRIB_CHECK(fresh, InvalidArgument, "config {}: {} '{}' repeats {}: every role needs its own host:port", r.file(),
                 where, texts[i], it->second);
      out.push_back(std::move(e));
    }
    return out;
  };
  spec.ps = read_list("ps");
  spec.workers = read_list("workers");
  r.finish();
  TRIB_CHECK(!spec.workers.empty(), InvalidArgument, "config {}: {} must list at least one host:port", r.file(),
             r.where("workers"));
  return spec;
}

ClusterConfig read_cluster(ConfigReader r, bool present) {
  ClusterConfig c;
  c.enabled = present;
  c.ps = r.get<int>("ps", c.ps);
  c.workers = r.get<int>("workers", c.workers);
  c.coordinator = r.get<std::string>("coordinator", c.coordinator);
  if (r.has("spec")) {
    c.has_spec = true;
    c.spec = read_spec(r.child("spec"));
    // Counts may be written beside the lists, but then they must agree with them.
    auto agree = [&](const std::string& key, int count, std::size_t listed) {
      TRIB_CHECK(!r.has(key) || count == static_cast<int>(listed), InvalidArgument,
                 "config {}: {} is {} but {}.{} lists {} address(es)", r.file(), r.where(key), count, r.where("spec"),
                 key, listed);
    };
    agree("ps", c.ps, c.spec.ps.size());
    agree("workers", c.workers, c.spec.workers.size());
    TRIB_CHECK(!r.has("coordinator") || c.coordinator == c.spec.coordinator.to_string(), InvalidArgument,
               "config {}: {} '{}' disagrees with {}.coordinator '{}'", r.file(), r.where("coordinator"),
               c.coordinator, r.where("spec"), c.spec.coordinator.to_string());
    c.ps = static_cast<int>(c.spec.ps.size());
    c.workers = static_cast<int>(c.spec.workers.size());
    c.coordinator = c.spec.coordinator.to_string();
  }
  c.bind_host = r.get<std::string>("bind_host", c.bind_host);
  c.heartbeat_ms = r.get<int>("heartbeat_ms", c.heartbeat_ms);
  c.peer_timeout_ms = r.get<int>("peer_timeout_ms", c.peer_timeout_ms);
  c.join_timeout_s = r.get<int>("join_timeout_s", c.join_timeout_s);
  c.max_restarts = r.get<int>("max_restarts", c.max_restarts);
  c.stream_rejoin = r.get<bool>("stream_rejoin", c.stream_rejoin);
  c.max_workers = r.get<int>("max_workers", c.max_workers);
  c.preemption_grace_s = r.get<int>("preemption_grace_s", c.preemption_grace_s);
  c.coordinator_timeout_s = r.get<int>("coordinator_timeout_s", c.coordinator_timeout_s);
  c.store = r.get<std::string>("store", c.store);
  r.finish();
  try {
    cluster::validate_store_url(c.store);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("config {}: {}: {}", r.file(), r.where("store"), e.what()));
  }
  TRIB_CHECK(c.ps >= 0 && c.ps <= 64 && c.workers >= 1 && c.workers <= 256, InvalidArgument,
             "config {}: cluster needs 0..64 ps and 1..256 workers, got ps: {}, workers: {}", r.file(), c.ps,
             c.workers);
  TRIB_CHECK(c.heartbeat_ms > 0 && c.peer_timeout_ms > c.heartbeat_ms && c.join_timeout_s > 0, InvalidArgument,
             "config {}: cluster.peer_timeout_ms must exceed heartbeat_ms, both positive", r.file());
  TRIB_CHECK(c.max_workers == 0 || (c.max_workers >= c.workers && c.max_workers <= 256), InvalidArgument,
             "config {}: {} is {}, expected {}..256 (at least cluster.workers)", r.file(), r.where("max_workers"),
             c.max_workers, c.workers);
  TRIB_CHECK(c.max_restarts >= 0 && c.max_restarts <= 1000, InvalidArgument,
             "config {}: {} is {}, expected 0..1000", r.file(), r.where("max_restarts"), c.max_restarts);
  TRIB_CHECK(c.preemption_grace_s > 0, InvalidArgument, "config {}: cluster.preemption_grace_s must be at least 1, got {}",
             r.file(), c.preemption_grace_s);
  TRIB_CHECK(c.coordinator_timeout_s >= 1 && c.coordinator_timeout_s <= 86400, InvalidArgument,
             "config {}: {} is {}, expected 1..86400 seconds", r.file(), r.where("coordinator_timeout_s"),
             c.coordinator_timeout_s);
  return c;
}

// strategy pipeline: what can be told from the file alone, before any process starts. The
// memory limit needs the planner's measurements (pipeline/planner.h).
void check_pipeline(JobConfig& job, const std::string& origin) {
  const StrategyConfig& s = job.strategy;
  const int layers = static_cast<int>(job.model.layers.size());
  TRIB_CHECK(s.stages <= layers, InvalidArgument,
             "config {}: strategy.stages is {} but the model has only {} layer(s): each stage needs at least one",
             origin, s.stages, layers);
  TRIB_CHECK(job.training.batch % s.micro_batches == 0, InvalidArgument,
             "config {}: strategy.micro_batches ({}) must divide training.batch ({})", origin, s.micro_batches,
             job.training.batch);
  int last = -1;
  for (int i = 0; i < layers; ++i) {
    const int st = job.model.layers[static_cast<std::size_t>(i)].stage;
    if (st < 0) continue;
    TRIB_CHECK(st < s.stages, InvalidArgument, "config {}: model.layers[{}].stage is {} but strategy.stages is {}",
               origin, i, st, s.stages);
    TRIB_CHECK(st >= last, InvalidArgument,
               "config {}: model.layers[{}].stage is {} after a layer of stage {}: stages must follow the layers' order",
               origin, i, st, last);
    last = st;
  }
  TRIB_CHECK(job.cluster.enabled, InvalidArgument,
             "config {}: strategy pipeline runs each stage as a process: add a cluster section (cluster: {{}} runs "
             "them on this machine)",
             origin);
  TRIB_CHECK(job.training.clip_norm <= 0, InvalidArgument,
             "config {}: training.clip_norm is not supported by strategy pipeline yet (each stage holds only its own "
             "gradients; the whole model's norm is not computed)",
             origin);
  for (std::size_t i = 0; i < job.model.layers.size(); ++i)
    TRIB_CHECK(job.model.layers[i].type != "batch_norm", InvalidArgument,
               "config {}: model.layers[{}] is batch_norm, which strategy pipeline does not run (its statistics would "
               "be a micro-batch's, not the batch's)",
               origin, i);
  {
    const int processes = s.stages * s.replicas;
    if (job.cluster.workers == 1) job.cluster.workers = processes;  // one process per stage and replica
    TRIB_CHECK(job.cluster.workers == processes, InvalidArgument,
               "config {}: cluster.workers is {} but strategy pipeline runs stages x replicas = {} x {} = {} processes",
               origin, job.cluster.workers, s.stages, s.replicas, processes);
    TRIB_CHECK(job.cluster.ps == 0, InvalidArgument, "config {}: strategy pipeline uses no parameter servers (cluster.ps: 0)",
               origin);
  }
}

}  // namespace

JobConfig parse_job_config(const std::string& yaml_text, const std::string& origin,
                           const std::vector<std::string>& overrides, std::set<std::string>* keys_read) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InvalidArgument(fmt::format("config {}: not valid YAML: {} (line {}, column {})", origin,
                                      e.msg, e.mark.line + 1, e.mark.column + 1));
  }
  TRIB_CHECK(root.IsMap(), InvalidArgument, "config {}: expected a mapping with model, data, training... sections",
             origin);
  for (const std::string& o : overrides) apply_override(root, o);

  ConfigReader r(root, origin);
  r.log_keys_to(keys_read);
  JobConfig job;
  job.source_file = origin;
  job.name = r.get<std::string>("name", "job");
  job.model = read_model(r.child("model"));
  job.data = read_data(r.child("data"));
  if (job.data.num_classes == 0) job.data.num_classes = static_cast<int>(job.model.classes);
  job.schedule = read_schedule(r.child("schedule"));
  job.optimizer = read_optimizer(r.child("optimizer"), job.schedule.base_lr);
  job.training = read_training(r.child("training"));
  ConfigReader threads = r.child("threads");
  job.threads.intra = threads.get<int>("intra", 0);
  job.threads.inter = threads.get<int>("inter", 1);
  threads.finish();
  bool has_cluster = r.has("cluster");
  job.cluster = read_cluster(r.child("cluster"), has_cluster);
  job.strategy = read_strategy(r.child("strategy"));
  ConfigReader security = r.child("security");
  job.security.encryption = security.get<bool>("encryption", job.security.encryption);
  security.finish();
  ConfigReader monitoring = r.child("monitoring");
  job.monitoring.port = monitoring.get<int>("port", job.monitoring.port);
  job.monitoring.bind = monitoring.get<std::string>("bind", job.monitoring.bind);
  job.monitoring.token_file = monitoring.get<std::string>("token_file", job.monitoring.token_file);
  job.monitoring.tensorboard = monitoring.get<bool>("tensorboard", job.monitoring.tensorboard);
  monitoring.finish();
  TRIB_CHECK(job.monitoring.port >= 0 && job.monitoring.port <= 65535, InvalidArgument,
             "config {}: monitoring.port must be a port in 1..65535, or 0 for off; got {}", origin,
             job.monitoring.port);
  TRIB_CHECK(!job.monitoring.bind.empty(), InvalidArgument, "config {}: monitoring.bind is empty: expected an address "
             "to listen on, e.g. 127.0.0.1", origin);
  if (job.strategy.name == StrategyName::pipeline) check_pipeline(job, origin);
  if (job.strategy.name != StrategyName::ps && job.strategy.name != StrategyName::pipeline && job.cluster.ps > 0)
    job.cluster.ignored_ps = std::exchange(job.cluster.ps, 0);
  if (job.cluster.enabled) {
    TRIB_CHECK(job.strategy.name != StrategyName::local, InvalidArgument,
               "config {}: a cluster needs strategy.name ps, allreduce or pipeline", origin);
    TRIB_CHECK(job.strategy.name != StrategyName::ps || job.cluster.ps >= 1, InvalidArgument,
               "config {}: strategy ps needs cluster.ps >= 1", origin);
    // A backup lives on another server: with one, there is nowhere to put it.
    TRIB_CHECK(job.strategy.ps_replicas == 0 || (job.strategy.name == StrategyName::ps && job.cluster.ps >= 2),
               InvalidArgument,
               "config {}: strategy.ps_replicas: 1 needs strategy ps with cluster.ps >= 2 (a shard's backup lives on "
               "another server), got {} server(s)",
               origin, job.cluster.ps);
    TRIB_CHECK(job.strategy.backup_workers < job.cluster.workers, InvalidArgument,
               "config {}: strategy.backup_workers ({}) must be fewer than cluster.workers ({})", origin,
               job.strategy.backup_workers, job.cluster.workers);
    // A worker whose partitions go quiet ends on its own. Parameter servers then stop
    // waiting for it; an allreduce group has no such notion, and would wait for it until
    // its deadline.
    TRIB_CHECK(!(job.data.stream() && job.data.kafka.idle_timeout_s > 0 && job.cluster.workers > 1 &&
                 job.strategy.name == StrategyName::allreduce),
               InvalidArgument,
               "config {}: data.kafka.idle_timeout_s ends each worker when its own partitions go quiet, but strategy "
               "allreduce steps the {} workers together, so the first to end would stall the others: end the job "
               "with training.steps (and idle_timeout_s: 0), or use strategy ps",
               origin, job.cluster.workers);
  }
  r.finish();
  job.given = r.given();
  YAML::Emitter out;
  out << root;
  job.resolved_yaml = std::string(out.c_str()) + "\n";
  return job;
}

JobConfig load_job_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  TRIB_CHECK(in.good(), NotFound, "config file '{}' cannot be opened", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_job_config(ss.str(), path, overrides);
}

std::shared_ptr<nn::Sequential> build_model(const ModelConfig& model) {
  auto seq = std::make_shared<nn::Sequential>();
  for (const LayerConfig& l : model.layers) {
    nn::LayerPtr layer;
    if (l.type == "dense") layer = std::make_shared<nn::Dense>(l.dense, l.name);
    else if (l.type == "conv2d") layer = std::make_shared<nn::Conv2D>(l.conv, l.name);
    else if (l.type == "max_pool2d") layer = std::make_shared<nn::MaxPool2D>(l.pool_size, l.pool_stride, l.name);
    else if (l.type == "avg_pool2d") layer = std::make_shared<nn::AvgPool2D>(l.pool_size, l.pool_stride, l.name);
    else if (l.type == "flatten") layer = std::make_shared<nn::Flatten>(l.name);
    else if (l.type == "dropout") layer = std::make_shared<nn::Dropout>(l.rate, l.name);
    else if (l.type == "batch_norm") layer = std::make_shared<nn::BatchNorm>(l.momentum, l.epsilon, l.name);
    else if (l.type == "embedding") layer = std::make_shared<nn::Embedding>(l.vocabulary, l.dim, l.name);
    else if (l.type == "activation") layer = std::make_shared<nn::ActivationLayer>(l.activation, l.name);
    else throw InvalidArgument(fmt::format("unknown layer type '{}'", l.type));
    seq->add(layer);
  }
  return seq;
}

}  // namespace trib::config
