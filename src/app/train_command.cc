#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "app/builtin_stream.h"
#include "app/cluster_roles.h"
#include "app/commands.h"
#include "app/failed_run.h"
#include "app/interrupt_cleanup.h"
#include "app/launcher_monitor.h"
#include "app/role_monitor.h"
#include "app/net_log.h"
#include "app/train_job.h"
#include "trib/cluster/make_registry.h"
#include "trib/cluster/coordinator.h"
#include "trib/cluster/local_cluster.h"
#include "trib/core/termination_signal.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"
#include "trib/train/dataset_batch_source.h"
#include "trib/train/datasets.h"
#include "trib/train/progress.h"
#include "trib/pipeline/planner.h"
#include "trib/train/run_directory.h"
#include "trib/train/trainer.h"
#include "trib/train_stream/stream_trainer.h"

namespace trib::app {

namespace {

// What a cluster job's processes would each refuse, checked once here before any starts: the
// data files and that each worker's shard holds a batch.
// An allreduce job reading Kafka: the survivors of a lost worker re-form the group and go on
// with their Kafka positions; its relaunched process rejoins the running group, the chief too
// where the job assigns the partitions (docs/fault_tolerance.md, "Allreduce stream jobs").
bool allreduce_stream(const config::JobConfig& job) {
  return job.strategy.name == config::StrategyName::allreduce && job.data.stream();
}

void check_before_launch(const config::JobConfig& job) {
  if (job.data.stream()) return;
  train::Datasets data = train::load_datasets(job.data, job.model);
  // A pipeline's data is split between its replicas only: their first stages read it.
  const bool pipeline = job.strategy.name == config::StrategyName::pipeline;
  train::steps_per_epoch(data.train->size(), job, pipeline ? job.strategy.replicas : job.cluster.workers);
}

// Servers that a strategy other than ps never talks to, given in a config switched from ps
// (say with --set strategy.name=allreduce): parsing ignored them (ClusterConfig::ignored_ps).
// Said, not refused: a job file shared between strategies stays valid.
std::string unused_servers_note(const config::JobConfig& job) {
  if (job.cluster.ignored_ps == 0) return "";
  return fmt::format("strategy {} uses no parameter servers: cluster.ps: {} is ignored (none is started or waited "
                     "for)",
                     config::to_string(job.strategy.name), job.cluster.ignored_ps);
}

// Under `trib coordinator`: whether a lost chief is waited for (its node's supervisor starts it
// again), for the jobs whose chief a local launcher relaunches in place: a file job under ps or
// allreduce, and a stream job whose partitions the job assigns (train_stream::chief_rejoins).
bool chief_waited_for(const config::JobConfig& job) {
  const bool file_job = (job.strategy.name == config::StrategyName::ps ||
                         job.strategy.name == config::StrategyName::allreduce) &&
                        !job.data.stream();
  return (file_job || train_stream::chief_rejoins(job)) && job.cluster.max_restarts > 0;
}

// Said after "it is the chief, which is not relaunched in place" when it is not waited for.
std::string chief_not_waited_for(const config::JobConfig& job) {
  if (job.data.stream() && !train_stream::chief_rejoins(job))
    return " in this stream job (its Kafka partitions are not assigned by the job, or cluster.stream_rejoin is "
           "off: only a checkpoint holds its positions)";
  if (job.cluster.max_restarts == 0 &&
      (job.strategy.name == config::StrategyName::ps || job.strategy.name == config::StrategyName::allreduce))
    return " (cluster.max_restarts: 0)";
  return "";
}

// --metrics-port N: monitoring.port=N, after the job's own overrides.
std::vector<std::string> with_metrics_port(std::vector<std::string> overrides, int port) {
  if (port >= 0) overrides.push_back(fmt::format("monitoring.port={}", port));
  return overrides;
}

}  // namespace

int run_train(const TrainArgs& args, const Log& log) {
  train::TrainerOptions o;
  o.job = config::load_job_config(args.config, with_metrics_port(args.overrides, args.metrics_port));
  TRIB_CHECK(args.resume.empty() || args.output.empty() || args.resume == args.output, InvalidArgument,
             "--resume {} and --output {} disagree: a resumed run continues in its own directory",
             args.resume, args.output);
  if (!args.resume.empty()) {
    o.output = args.resume;
    o.resume = true;
  } else {
    o.output = args.output.empty() ? train::RunDirectory::default_path(o.job.name) : std::filesystem::path(args.output);
  }
  const bool terminal = train::Progress::is_terminal(stdout);
  o.interactive = terminal;
  FailedRunCleanup cleanup(o.output, o.resume);
  // SIGTERM (preemption): a checkpoint at the next step boundary, then exit 0. Before any
  // thread starts, so that none but its watcher takes the signal.
  TerminationSignal terminate;
  // Single-process: Ctrl-C cleans up too (before any thread starts; a cluster's launcher has its own).
  std::optional<InterruptCleanup> interrupted;
  if (!o.job.cluster.enabled) interrupted.emplace(cleanup, args.config, log);
  BuiltinStream builtin(o.job);  // a stream job without a broker: one here, fed by a generator
  if (!o.job.cluster.enabled) {
    train::SignalStop stop(terminate);
    o.stop = &stop;
    // monitoring.port: this one process serves its metrics on the base port.
    std::unique_ptr<RoleMonitor> monitor = start_role_monitor(o.job, "worker", 0, 0, log);
    if (monitor) o.metrics = &monitor->registry;
    try {
      train_job(o);
      if (terminate.received())
        log.info("stopped for SIGTERM with a checkpoint: continue the run with `trib train {} --resume {}`", args.config,
                 o.output.string());
    } catch (...) {
      if (std::string note = cleanup.after_failure(args.config); !note.empty()) log.info("{}", note);
      throw;
    }
    return 0;
  }
  // A cluster on this machine: its workers share the cores. Left to choose (intra 0), each
  // worker would take them all, and their OpenMP threads would fight over them.
  if (o.job.threads.intra == 0) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int each = std::max(1, cores / o.job.cluster.workers);
    o.job = config::parse_job_config(o.job.resolved_yaml, o.job.source_file, {fmt::format("threads.intra={}", each)});
    log.info("local cluster: {} worker(s) share {} core(s): threads.intra={} each (set threads.intra to choose)",
             o.job.cluster.workers, cores, each);
  }
  // Check what can be checked before starting processes.
  if (o.resume) train::check_resumable(o.output);
  else train::RunDirectory::check_new(o.output);
  check_before_launch(o.job);
  // A pipeline is planned once, here (a memory limit no cut meets stops it now), and every
  // stage runs the plan printed (pipeline/planner.h).
  if (o.job.strategy.name == config::StrategyName::pipeline)
    o.job = pipeline::pin_partition(
        o.job, pipeline::plan_for_job(o.job, [](const std::string& table) { fmt::print("{}", table); }).partition);
  check_monitoring_ports(o.job);
  cluster::LocalClusterOptions lc;
  lc.executable = std::filesystem::read_symlink("/proc/self/exe").string();
  lc.job_yaml = o.job.resolved_yaml;
  lc.run_dir = o.output.string();
  lc.resume = o.resume;
  lc.ps = o.job.cluster.ps;
  lc.workers = o.job.cluster.workers;
  // Joiners beyond cluster.workers (trib scale) need data that goes to whoever is present: a
  // parameter-server job's dynamic chunks, or an allreduce group resharding at an epoch boundary.
  const bool allreduce_files = o.job.strategy.name == config::StrategyName::allreduce && !o.job.data.stream();
  if ((o.job.strategy.name == config::StrategyName::ps && !o.job.data.stream() && o.job.data.assignment == "dynamic") ||
      allreduce_files)
    lc.max_workers = o.job.cluster.max_workers_or_default();
  // Scaled down, an allreduce worker leaves when asked through the store (SIGTERM is the job's
  // preemption there), at an epoch boundary.
  lc.leave_by_request = allreduce_files;
  lc.net = net_options(o.job);
  if (std::string note = unused_servers_note(o.job); !note.empty()) log.warn("local cluster: {}", note);
  lc.live = terminal;
  lc.log_level = log.level();
  // Under allreduce the survivors re-form their group and go on (docs/fault_tolerance.md); in
  // a stream job they also roll back to the newest checkpoint, Kafka positions included. Not a
  // pipeline (it cannot go on without a stage): it restarts whole instead (below).
  const bool pipeline = o.job.strategy.name == config::StrategyName::pipeline;
  // A pipeline without replicas relaunches a lost stage alone, stage 0 (the chief) included:
  // the others roll back in place, and a relaunched stage 0 takes the run directory back.
  const bool relaunch_stages = pipeline && o.job.strategy.replicas == 1 && o.job.cluster.max_restarts > 0;
  lc.workers_may_be_lost = (o.job.strategy.name != config::StrategyName::local && !pipeline) || relaunch_stages;
  // A relaunched allreduce worker joins the running group; in a stream job the group then rolls
  // back to its newest checkpoint, Kafka positions included (StreamHooks::on_regroup). With
  // cluster.stream_rejoin off a stream job goes on with N-1.
  lc.relaunch_workers = lc.workers_may_be_lost && (!allreduce_stream(o.job) || o.job.cluster.stream_rejoin);
  // A parameter-server stream job whose partitions the job assigns relaunches its chief in
  // place too (below); should the relaunched process fail (it cannot rejoin), the job
  // restarts whole.
  const bool ps_stream_chief_rejoins = train_stream::ps_chief_rejoins(o.job);
  // An allreduce stream job likewise (job-assigned partitions, cluster.stream_rejoin): its
  // relaunched chief joins the running group as a relaunched worker does.
  const bool allreduce_stream_chief_rejoins = train_stream::allreduce_chief_rejoins(o.job);
  lc.relaunched_counts_as_lost = allreduce_stream(o.job) || ps_stream_chief_rejoins;
  // A lost parameter server is relaunched, and the chief restores the job from a checkpoint;
  // a stream job's workers rewind their Kafka positions with it, in place.
  // With strategy.ps_replicas a lost server's backup takes over and nothing rolls back.
  lc.relaunch_servers = o.job.strategy.name == config::StrategyName::ps;
  lc.server_backups = o.job.strategy.ps_replicas > 0;
  // A lost chief likewise: the new one rejoins the running job with the servers' state (ps;
  // it restores every server from the newest checkpoint where one was relaunched empty), joins the survivors' group as a relaunched worker does (allreduce), or takes the pipeline's
  // run directory back as stage 0 (relaunch_stages). A stream job's only where the job assigns
  // its partitions (above); on the consumer group the job restarts whole instead (below).
  lc.relaunch_chief = ((lc.relaunch_servers || o.job.strategy.name == config::StrategyName::allreduce) &&
                       !o.job.data.stream()) ||
                      relaunch_stages || ps_stream_chief_rejoins || allreduce_stream_chief_rejoins;
  if (lc.relaunch_chief && o.job.strategy.name == config::StrategyName::ps && !o.job.data.stream())
    lc.chief_note = "it rejoins the running job in place with the servers' state (if a server was lost with it and "
                    "no backup holds its shard, every server reloads the newest checkpoint)";
  if (ps_stream_chief_rejoins)
    lc.chief_note = "it rejoins the running job in place with the servers' state, its Kafka partitions at its last "
                    "applied push (if a server was lost with it, the job restarts whole from its newest checkpoint)";
  if (allreduce_stream_chief_rejoins)
    lc.chief_note = "the others go on without it, the lowest one leading, and it joins their running group, taking "
                    "the run directory back (if it cannot, the job restarts whole from its newest checkpoint)";
  const bool restarts_whole_job =
      pipeline || (o.job.data.stream() && o.job.strategy.name != config::StrategyName::local);
  if (pipeline)
    lc.loss_note = "a pipeline cannot go on without a stage: every stage starts again from the newest checkpoint";
  else if (restarts_whole_job)
    lc.loss_note = fmt::format(
        "a stream job restarts all its processes from the newest checkpoint when it loses {}; every event is trained "
        "exactly once",
        allreduce_stream_chief_rejoins ? "a relaunched process that could not join (a worker or its chief lost "
                                         "mid-run or after the last exchange is recovered in place)"
        : allreduce_stream(o.job)        ? "its chief (a worker lost mid-run is recovered in place, one lost after the "
                                           "last exchange taken at its cursor of the last step)"
        : ps_stream_chief_rejoins ? "a process it does not recover in place (a server past cluster.max_restarts, or "
                                    "a relaunched process that could not rejoin)"
                                  : "a process it does not recover in place (its chief, or a server past "
                                    "cluster.max_restarts)");
  lc.max_restarts = o.job.cluster.max_restarts;
  lc.terminate = &terminate;
  lc.preemption_grace = std::chrono::seconds(o.job.cluster.preemption_grace_s);
  lc.store = o.job.cluster.store;
  lc.job_name = o.job.name;
  std::string lost;
  lc.lost_process = &lost;
  lc.monitor = [&o, &log](cluster::Coordinator& coordinator, const std::shared_ptr<net::NetContext>& net) {
    return start_launcher_monitor(o.job, coordinator, net, log);
  };
  int code = cluster::run_local_cluster(lc);
  // A stream job that lost a process it does not recover in place (its chief; a server past
  // its relaunches; under allreduce, a worker) or a pipeline
  // that lost a stage: the whole job again from its newest checkpoint, as --resume would, up
  // to cluster.max_restarts times (a fresh coordinator, so no barrier of the stopped
  // incarnation is seen again). docs/fault_tolerance.md, "Pipeline: a lost stage".
  for (int restart = 1; code != 0 && restarts_whole_job && !lost.empty() && !terminate.received() &&
                        restart <= o.job.cluster.max_restarts;
       ++restart) {
    try {
      train::check_resumable(o.output);
    } catch (const Error& e) {
      log.info("local cluster: not restarting the job: {}", e.what());
      break;
    }
    log.info("local cluster: restarting the job from its newest checkpoint ({} of {})", restart,
             o.job.cluster.max_restarts);
    lost.clear();
    lc.resume = true;
    code = cluster::run_local_cluster(lc);
  }
  if (code != 0)
    if (std::string note = cleanup.after_failure(args.config); !note.empty()) log.info("{}", note);
  return code;
}

int run_coordinator(const CoordinatorArgs& args, const Log& log) {
  config::JobConfig job = config::load_job_config(args.config, with_metrics_port(args.overrides, args.metrics_port));
  TRIB_CHECK(job.cluster.enabled, InvalidArgument, "config {}: the coordinator needs a cluster section", args.config);
  // A --secret-file that does not exist yet is created private (mode 0600 from its first
  // byte); a descriptor or the environment variable are read as they are.
  std::optional<net::ClusterSecret> secret;
  if (args.secret_fd < 0 && !args.secret_file.empty()) {
    bool created = false;
    secret = net::ClusterSecret::load_or_create(args.secret_file, created);
    if (created) log.info("wrote a new cluster secret to {}: copy it to every host of the job", args.secret_file);
  } else {
    secret = net::load_secret({args.secret_fd, args.secret_file, cluster::kSecretEnv});
  }
  auto ctx = net::NetContext::create(std::move(*secret), net::PeerIdentity{"coordinator", 0, ""}, net_options(job),
                                     net_log_sink(log));
  auto transport = std::make_shared<net::TcpTransport>(ctx);
  TRIB_CHECK(args.resume.empty() || args.output.empty() || args.resume == args.output, InvalidArgument,
             "--resume {} and --output {} disagree: a resumed run continues in its own directory", args.resume,
             args.output);
  // The run directory is the chief worker's, on its host: the coordinator only passes it on
  // (the chief checks it), and the servers never see it (their shards travel to the chief).
  std::string run_dir = !args.resume.empty() ? args.resume
                        : args.output.empty() ? train::RunDirectory::default_path(job.name).string()
                                              : args.output;
  // --listen may differ from a spec's coordinator: 0.0.0.0:7000 on the host the spec names.
  std::string listen = args.listen.empty() ? job.cluster.coordinator : args.listen;
  cluster::Coordinator coordinator(transport, {.listen = listen,
                                               .job_yaml = job.resolved_yaml,
                                               .run_dir = run_dir,
                                               .resume = !args.resume.empty(),
                                               .ps = job.cluster.ps,
                                               .workers = job.cluster.workers,
                                               // Joiners beyond cluster.workers: parameter-server jobs,
                                               // and allreduce jobs on files (taken in at an epoch boundary).
                                               .max_workers = job.strategy.name == config::StrategyName::ps ||
                                                                      (job.strategy.name == config::StrategyName::allreduce &&
                                                                       !job.data.stream())
                                                                  ? job.cluster.max_workers_or_default()
                                                                  : job.cluster.workers,
                                               .workers_may_be_lost = job.strategy.name != config::StrategyName::local,
                                               // A lost server is relaunched by whatever supervises
                                               // this host's roles (systemd, Kubernetes, a script:
                                               // the same `trib ps --join`); the chief restores the
                                               // job from its newest checkpoint meanwhile (a stream
                                               // job's Kafka positions rewind with it).
                                               .servers_may_be_lost = job.strategy.name == config::StrategyName::ps,
                                               // A lost chief likewise, where a local launcher
                                               // relaunches it in place (a file job under ps or
                                               // allreduce, a stream job whose partitions the job
                                               // assigns): the coordinator waits for it.
                                               .chief_may_be_lost = chief_waited_for(job),
                                               .chief_wait = std::chrono::seconds(job.cluster.join_timeout_s),
                                               .chief_returns = job.cluster.max_restarts,
                                               .chief_not_relaunched = chief_not_waited_for(job),
                                               .registry = cluster::make_registry(job.cluster.store, job.name),
                                               .journal = (std::filesystem::path(run_dir) /
                                                           train::RunDirectory::kCoordinatorJournal).string(),
                                               .info = [&log](const std::string& line) { log.info("{}", line); }});
  std::shared_ptr<void> monitoring = start_launcher_monitor(job, coordinator, ctx, log);  // monitoring.port
  if (const cluster::Restart& r = coordinator.restart(); r.running)
    log.info("coordinator: took the running job back from {} (generation {}): waiting for its {} member(s) to "
             "reconnect",
             r.from, r.generation,
             r.awaiting);
  log.info("coordinator listening at {}; waiting for {} parameter server(s) and {} worker(s)", coordinator.address(),
           job.cluster.ps, job.cluster.workers);
  if (std::string note = unused_servers_note(job); !note.empty()) log.warn("coordinator: {}", note);
  // Wait in short slices so that connections refused for a wrong secret are reported as
  // they come (each is also logged with its address); the job itself is not disturbed.
  cluster::Outcome outcome;
  std::uint64_t refused = 0;
  for (;;) {
    try {
      outcome = coordinator.wait(std::chrono::seconds(1));
      break;
    } catch (const Timeout&) {
    }
    if (std::uint64_t n = ctx->stats().auth_failures.load(); n != refused) {
      refused = n;
      log.warn("coordinator: {} connection(s) refused so far for a wrong cluster secret", refused);
    }
  }
  coordinator.shutdown_members();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  TRIB_CHECK(outcome.ok, Error, "the job failed: {}", outcome.failure);
  log.info("every worker finished");
  return 0;
}

int run_eval(const EvalArgs& args) {
  train::EvalOptions o;
  o.job = config::load_job_config(args.config, args.overrides);
  o.checkpoint = args.checkpoint;
  o.limit = args.limit;
  o.outputs = args.outputs;
  train::evaluate_checkpoint(o);
  return 0;
}

}  // namespace trib::app
