#include "app/cli.h"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cluster_roles.h"
#include "app/commands.h"
#include "app/version.h"
#include "plan/plan_command.h"
#include "trib/core/error.h"

namespace trib::app {
namespace {

// `--set key=value`, repeatable, one value per occurrence: a vector option would otherwise
// take every word after it, the job file too (`trib eval --set k=v JOB --checkpoint R`).
void add_overrides(CLI::App* cmd, std::vector<std::string>& overrides) {
  cmd->add_option("--set", overrides, "override a setting: key.path=value (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE")
      ->default_str("");  // none: "[]" would read as a value
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"Tributary: train neural networks on clusters of ordinary machines", "trib"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::function<std::string()>(version_text),
                       "Print the version, the commit and the versions of oneDNN and librdkafka");
  // --help shows each option's default; subcommands copy this when they are added.
  app.option_defaults()->always_capture_default();
  // Options of `trib` itself may also come after the subcommand: `trib train JOB --log-level debug`.
  app.fallthrough();
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "log lines from this level up: debug, info, warn, error or off")
      ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}));

  TrainArgs train;
  CLI::App* train_cmd = app.add_subcommand("train", "Train the model a job file describes");
  train_cmd->add_option("config", train.config, "job file (YAML)")->required()->check(CLI::ExistingFile);
  add_overrides(train_cmd, train.overrides);
  train_cmd->add_option("--output", train.output, "run directory (default runs/<name>-<time>)");
  train_cmd->add_option("--resume", train.resume, "continue the run in this directory from its newest checkpoint");
  train_cmd->add_option("--metrics-port", train.metrics_port,
                        "serve metrics and the dashboard from this base port (monitoring.port; 0: off)")
      ->check(CLI::Range(0, 65535));

  EvalArgs eval;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Evaluate a checkpoint on the job's test data");
  eval_cmd->add_option("config", eval.config, "job file (YAML)")->required()->check(CLI::ExistingFile);
  eval_cmd->add_option("--checkpoint", eval.checkpoint, "ckpt-<step> directory or run directory")->required();
  add_overrides(eval_cmd, eval.overrides);
  eval_cmd->add_option("--limit", eval.limit, "evaluate the first N test examples only (0: all)")
      ->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--outputs", eval.outputs, "also write the logits [examples, classes] to this .npy file");

  RoleArgs ps_args, worker_args;
  CLI::App* ps_cmd = app.add_subcommand("ps", "Run a parameter server of a cluster job");
  CLI::App* worker_cmd = app.add_subcommand("worker", "Run a worker of a cluster job");
  NodeArgs node_args;
  CLI::App* node_cmd = app.add_subcommand(
      "node",
      "Run one process of an srun, mpirun, torchrun or Kubernetes indexed Job launch: ranks below --ps are parameter "
      "servers, the rest workers");
  node_cmd->add_option("--ps", node_args.ps, "how many of the launched processes are parameter servers")
      ->required()
      ->check(CLI::NonNegativeNumber);
  node_cmd->add_option("--size", node_args.size,
                       "how many processes the launch has, where the launcher does not say (JOB_COMPLETION_INDEX); "
                       "-1: the launcher's size, else the job's counts")
      ->check(CLI::Range(1, 1 << 20));
  node_cmd->add_option("--join", node_args.role.join, "the coordinator's HOST:PORT (default: $MASTER_ADDR:$MASTER_PORT)");
  ps_cmd->add_option("--join", ps_args.join, "the coordinator's HOST:PORT")->required();
  worker_cmd->add_flag("--progress-lines", worker_args.progress_lines,
                       "print progress as machine-readable lines (for a local-cluster launcher)");
  worker_cmd->add_option("--join", worker_args.join, "the coordinator's HOST:PORT")->required();
  for (auto [cmd, a] : {std::pair{ps_cmd, &ps_args}, std::pair{worker_cmd, &worker_args},
                        std::pair{node_cmd, &node_args.role}}) {
    cmd->add_option("--secret-file", a->secret_file, "file holding the cluster secret (hex, mode 600); default: $TRIB_CLUSTER_SECRET");
    cmd->add_option("--secret-fd", a->secret_fd, "read the cluster secret (hex) from this open file descriptor")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--bind", a->bind_host, "address this role's servers bind to (default: the job's cluster.bind_host)");
    cmd->add_option("--timeout", a->timeout_s, "seconds to keep trying to reach the coordinator")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--index", a->index, "which index of its role to take, from 0 (-1: the lowest free one)")
        ->check(CLI::NonNegativeNumber);
  }

  CoordinatorArgs coord;
  CLI::App* coord_cmd = app.add_subcommand("coordinator", "Run the coordinator of a multi-host cluster job");
  coord_cmd->add_option("config", coord.config, "job file (YAML) with a cluster section")->required()->check(CLI::ExistingFile);
  coord_cmd->add_option("--listen", coord.listen, "HOST:PORT to listen on (default: the job's cluster.coordinator)");
  coord_cmd->add_option("--secret-file", coord.secret_file, "cluster secret (hex, mode 600); created if missing");
  coord_cmd->add_option("--secret-fd", coord.secret_fd, "read the cluster secret (hex) from this open file descriptor")
      ->check(CLI::NonNegativeNumber);
  coord_cmd->add_option("--output", coord.output, "run directory (on the chief worker's host)");
  coord_cmd->add_option("--metrics-port", coord.metrics_port,
                        "serve metrics and the dashboard on this port (monitoring.port; 0: off)")
      ->check(CLI::Range(0, 65535));
  coord_cmd->add_option("--resume", coord.resume,
                        "continue the run in this directory (on the chief worker's host) from its newest checkpoint");
  add_overrides(coord_cmd, coord.overrides);

  std::string inspect_path;
  CLI::App* inspect_cmd = app.add_subcommand("inspect", "List a checkpoint's tensors and manifest");
  inspect_cmd->add_option("path", inspect_path, "ckpt-<step> directory or run directory")->required();

  ExportArgs export_args;
  CLI::App* export_cmd = app.add_subcommand("export", "Write a run's model with its newest checkpoint as an ONNX file");
  export_cmd->add_option("run_dir", export_args.run_dir, "run directory (trib train --output)")
      ->required()
      ->check(CLI::ExistingDirectory);
  export_cmd->add_option("--format", export_args.format, "output format")->check(CLI::IsMember({"onnx"}));
  export_cmd->add_option("--output", export_args.output, "file to write, e.g. model.onnx")->required();
  export_cmd->add_option("--checkpoint", export_args.checkpoint, "ckpt-<step> directory (default: the run's newest)");
  export_cmd->add_option("--opset", export_args.opset, "ONNX opset to declare")->check(CLI::Range(13, 17));

  ServeArgs serve_args;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve", "Serve a run's model over HTTP, reloading each newer checkpoint while the run trains");
  serve_cmd->add_option("run_dir", serve_args.run_dir, "run directory (trib train --output)")->required();
  serve_cmd->add_flag("--wait", serve_args.wait,
                      "wait for the run directory's config.yaml to appear (a run started alongside)");
  serve_cmd->add_option("--listen", serve_args.listen, "HOST:PORT to listen on (port 0: any free one)");
  serve_cmd->add_option("--token-file", serve_args.token_file,
                        "bearer token (hex, mode 600; created if missing); default: $TRIB_SERVE_TOKEN. Required "
                        "beyond loopback");
  serve_cmd->add_option("--max-body-bytes", serve_args.max_body_bytes, "largest request body")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 32));
  serve_cmd->add_option("--max-batch", serve_args.max_batch, "most rows in one request")->check(CLI::Range(1, 1 << 20));
  serve_cmd->add_option("--poll-ms", serve_args.poll_ms, "how often to look for a newer checkpoint, milliseconds")
      ->check(CLI::Range(10, 600000));
  serve_cmd->add_option("--threads", serve_args.threads, "threads of one forward pass")->check(CLI::Range(1, 256));

  ScaleArgs scale;
  CLI::App* scale_cmd = app.add_subcommand("scale", "Change the worker count of a running local parameter-server job");
  scale_cmd->add_option("run_dir", scale.run_dir, "the job's run directory (trib train --output)")->required();
  scale_cmd->add_option("--workers", scale.workers, "workers to run from now on")->required()->check(CLI::Range(1, 256));
  scale_cmd->add_option("--timeout", scale.timeout_s, "seconds to wait for the job's launcher to take the request")
      ->check(CLI::Range(1, 3600));

  BrokerArgs broker;
  CLI::App* broker_cmd =
      app.add_subcommand("broker", "Run the built-in Kafka broker alone; prints bootstrap=HOST:PORT");
  broker_cmd->add_option("--topics", broker.topics, "topics to create, comma-separated")->delimiter(',');
  broker_cmd->add_option("--partitions", broker.partitions, "partitions per topic")->check(CLI::Range(1, 1024));
  broker_cmd->add_option("--brokers", broker.brokers, "broker count")->check(CLI::Range(1, 16));

  ProduceArgs produce;
  CLI::App* produce_cmd =
      app.add_subcommand("produce", "Produce synthetic card transactions with a drifting fraud label");
  produce_cmd->add_option("--bootstrap", produce.bootstrap, "Kafka HOST:PORT (default: start a built-in broker)");
  produce_cmd->add_option("--topic", produce.topic, "topic to write to");
  produce_cmd->add_option("--partitions", produce.partitions, "partitions of the built-in broker's topic (-1: 4)")
      ->check(CLI::Range(1, 1024));
  produce_cmd->add_option("--rate", produce.rate, "events per second; 0: as fast as possible")
      ->check(CLI::NonNegativeNumber);
  produce_cmd->add_option("--count", produce.count, "stop after this many events (-1: no limit)");
  produce_cmd->add_option("--duration", produce.duration, "stop after this many seconds (-1: no limit)");
  produce_cmd->add_option("--format", produce.format, "json or csv")->check(CLI::IsMember({"json", "csv"}));
  produce_cmd->add_option("--key", produce.key, "message key: card, id or none")
      ->check(CLI::IsMember({"card", "id", "none"}));
  produce_cmd->add_option("--drift-after", produce.drift_after, "the fraud rule changes after this many seconds (-1: never)");
  produce_cmd->add_option("--drift-after-events", produce.drift_after_events, "... or after this many events (-1: never)");
  produce_cmd->add_option("--seed", produce.seed, "generator seed");

  SweepArgs sweep;
  CLI::App* sweep_cmd = app.add_subcommand("sweep", "Search hyper-parameters: run a sweep file's trials, grid, random or ASHA");
  sweep_cmd->add_option("config", sweep.config, "sweep file (YAML)")->required()->check(CLI::ExistingFile);
  sweep_cmd->add_option("--output", sweep.output, "sweep directory (default runs/<name>-<time>)");
  sweep_cmd->add_option("--resume", sweep.resume, "continue the sweep in this directory after a crash");
  PlotArgs plot;
  CLI::App* plot_cmd = app.add_subcommand(
      "plot",
      "Draw a sweep's trial curves (with gnuplot), or run directories' loss and accuracy curves and "
      "bench/scaling.sh's lines as images/s against workers (--output F.svg or F.png)");
  plot_cmd->add_option("paths", plot.paths, "a sweep directory, or run directories and files of bench=scaling lines")
      ->required()
      ->check(CLI::ExistingPath);
  plot_cmd->add_option("--output", plot.output, "the .svg or .png to write (default curves.svg)");
  StatusArgs status;
  CLI::App* status_cmd = app.add_subcommand("status", "Show a running job's members, workers and servers (monitoring.port)");
  status_cmd->add_option("target", status.target, "the job's run directory, or its launcher's HOST:PORT")->required();
  status_cmd->add_flag("--once", status.once, "print once and exit (for scripts)");
  status_cmd->add_flag("--json", status.json, "print the status once as JSON");
  status_cmd->add_option("--token-file", status.token_file, "bearer token for HOST:PORT (monitoring.token_file)");
  plan::PlanArgs plan_args;
  CLI::App* plan_cmd = app.add_subcommand(
      "plan", "Predict throughput for every strategy, worker, server and batch count on a cluster; recommend the sweet spot");
  plan_cmd->add_option("config", plan_args.config, "job file (YAML)")->required()->check(CLI::ExistingFile);
  add_overrides(plan_cmd, plan_args.overrides);
  plan_cmd->add_option("--link", plan_args.link, "each host's link: 1gbit, 10gbit, 250mbit, ...");
  plan_cmd->add_option("--hosts", plan_args.hosts, "hosts in the cluster (workers and servers)");
  plan_cmd->add_option("--cores-per-host", plan_args.cores_per_host, "cores per host; compute scales with them");
  plan_cmd->add_option("--latency-us", plan_args.latency_us, "one-way latency between hosts, microseconds");
  plan_cmd->add_option("--batches", plan_args.batches, "per-worker batch sizes to consider (default 64, 256 and the job's)")
      ->delimiter(',');
  plan_cmd->add_option("--step-ms", plan_args.step_ms,
                       "BATCH=MS: one step's compute on one core, measured elsewhere; skips the calibration (repeatable)")
      ->delimiter(',');
  plan_cmd->add_option("--cpu-ns-per-byte", plan_args.cpu_ns_per_byte,
                       "CPU per byte sent or received (encryption, the kernel's copies; 1.1, measured: docs/scaling_exchange_cpu.md)");
  plan_cmd->add_option("--calibrate-seconds", plan_args.calibrate_seconds, "timed compute per batch size");
  plan_cmd->add_option("--goodput", plan_args.goodput,
                       "the share of the link's rate a connection's bytes get (TCP/IP over 1500-byte frames: 0.95)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    // Logs go to stderr, with timestamps; what people read (progress, tables) to stdout.
    Log log("trib", parse_log_level(log_level));
    if (*train_cmd) return run_train(train, log);
    if (*eval_cmd) return run_eval(eval);
    if (*inspect_cmd) return run_inspect(inspect_path);
    if (*scale_cmd) return run_scale(scale, log);
    if (*export_cmd) return run_export(export_args);
    if (*serve_cmd) return run_serve(serve_args, log);
    // A role's SIGTERM (preemption) asks the job to checkpoint and stop (app/cluster_stop.h).
    if (*ps_cmd || *worker_cmd || *node_cmd) {
      TerminationSignal terminate;
      ps_args.terminate = worker_args.terminate = node_args.role.terminate = &terminate;
      if (*ps_cmd) return run_ps_role(ps_args, log);
      if (*worker_cmd) return run_worker_role(worker_args, log);
      return run_node_role(node_args, log);
    }
    if (*coord_cmd) return run_coordinator(coord, log);
    if (*broker_cmd) return run_broker(broker);
    if (*produce_cmd) return run_produce(produce);
    if (*sweep_cmd) return run_sweep(sweep);
    if (*plot_cmd) return run_plot(plot);
    if (*status_cmd) return run_status(status);
    if (*plan_cmd) return plan::run_plan(plan_args);
  } catch (const InvalidArgument& e) {
    fmt::print(stderr, "trib: error: {}\n", e.what());
    return 2;
  } catch (const NotFound& e) {
    fmt::print(stderr, "trib: error: {}\n", e.what());
    return 2;
  } catch (const Corruption& e) {
    fmt::print(stderr, "trib: error: {}\n", e.what());
    return 2;
  } catch (const Unauthenticated& e) {
    fmt::print(stderr, "trib: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "trib: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace trib::app
