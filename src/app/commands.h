// One function per `trib` subcommand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trib/core/log.h"

namespace trib::app {

struct TrainArgs {
  std::string config;
  int metrics_port = -1;  // --metrics-port: monitoring.port; -1: the job's
  std::vector<std::string> overrides;
  std::string output;
  std::string resume;
};
int run_train(const TrainArgs& args, const Log& log);

struct EvalArgs {
  std::string config;
  std::string checkpoint;
  std::vector<std::string> overrides;
  std::int64_t limit = 0;  // the first test examples only; 0: all
  std::string outputs;     // also write the logits here (.npy)
};
int run_eval(const EvalArgs& args);

int run_inspect(const std::string& path);

// `trib export RUN_DIR --format onnx --output FILE` (export_command.cc).
struct ExportArgs {
  std::string run_dir;
  std::string format = "onnx";
  std::string output;
  std::string checkpoint;  // a ckpt-<step> directory; empty: the run's newest
  int opset = 13;
};
int run_export(const ExportArgs& args);

// `trib serve RUN_DIR --listen HOST:PORT` (serve_command.cc).
struct ServeArgs {
  std::string run_dir;
  std::string listen = "127.0.0.1:8500";
  std::string token_file;  // empty: $TRIB_SERVE_TOKEN, else no token (loopback only)
  std::size_t max_body_bytes = 64u << 20;
  std::int64_t max_batch = 1024;
  int poll_ms = 500;
  int threads = 1;  // intra-op threads of the forward pass
  bool wait = false;  // wait for <run_dir>/config.yaml to appear
};
int run_serve(const ServeArgs& args, const Log& log);

// `trib scale RUN_DIR --workers N`: asks the launcher of the local job running in RUN_DIR
// to grow or shrink it to N workers (scale_command.cc).
struct ScaleArgs {
  std::string run_dir;
  int workers = 0;
  int timeout_s = 15;  // how long to wait for the launcher to take the request
};
int run_scale(const ScaleArgs& args, const Log& log);

struct CoordinatorArgs {
  std::string config;
  int metrics_port = -1;  // --metrics-port: monitoring.port; -1: the job's
  std::string listen;
  std::string secret_file;
  int secret_fd = -1;
  std::string output;
  std::string resume;  // a run directory on the chief's host: continue from its newest checkpoint
  std::vector<std::string> overrides;
};
int run_coordinator(const CoordinatorArgs& args, const Log& log);

// `trib broker`: the built-in Kafka broker alone (broker_command.cc).
struct BrokerArgs {
  std::vector<std::string> topics = {"transactions"};
  int partitions = 4;
  int brokers = 1;
};
int run_broker(const BrokerArgs& args);

// `trib produce`: the fraud event generator (produce_command.cc).
struct ProduceArgs {
  std::string bootstrap;  // empty: start a built-in broker
  std::string topic = "transactions";
  int partitions = -1;    // of the built-in broker's topic; -1: 4
  double rate = 1000;
  std::int64_t count = -1;
  double duration = -1;
  std::string format = "json";
  std::string key = "card";
  double drift_after = -1;
  std::int64_t drift_after_events = -1;
  std::uint64_t seed = 1;
};
int run_produce(const ProduceArgs& args);

// `trib sweep` (sweep_command.cc).
struct SweepArgs {
  std::string config;
  std::string output;
  std::string resume;
};
int run_sweep(const SweepArgs& args);

// `trib plot PATH... [--output FILE.svg|FILE.png]` (plot_command.cc): one sweep directory (no
// --output) draws its trials as before; run directories draw their loss and accuracy curves
// side by side, and files of bench/scaling.sh's lines images/s against workers, in an SVG or
// a PNG of it.
struct PlotArgs {
  std::vector<std::string> paths;
  std::string output;
};
int run_plot(const PlotArgs& args);

// `trib status RUN_DIR|HOST:PORT` (status_command.cc): the job's members, workers and servers
// from their metrics endpoints, as a table refreshed every second, once, or as JSON.
struct StatusArgs {
  std::string target;      // a run directory (its config.yaml says where) or a launcher's HOST:PORT
  bool once = false;
  bool json = false;
  std::string token_file;  // for HOST:PORT; a run directory's job names its own
  int interval_ms = 1000;
};
int run_status(const StatusArgs& args);

}  // namespace trib::app
