#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "app/builtin_stream.h"
#include "app/cluster_roles.h"
#include "app/commands.h"
#include "app/train_job.h"
#include "trib/cluster/coordinator.h"
#include "trib/cluster/local_cluster.h"
#include "trib/core/termination_signal.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"
#include "trib/train/progress.h"
#include "trib/train/run_directory.h"
#include "trib/train/trainer.h"

namespace trib::app {

int run_train(const TrainArgs& args) {
  train::TrainerOptions o;
  o.job = config::load_job_config(args.config, args.overrides);
  TRIB_CHECK(args.resume.empty() || args.output.empty() || args.resume == args.output, InvalidArgument,
             "--resume {} and --output {} disagree: a resumed run continues in its own directory",
             args.resume, args.output);
  if (!args.resume.empty()) {
    o.output = args.resume;
    o.resume = true;
  } else {
    o.output = args.output.empty() ? train::RunDirectory::default_path(o.job.name) : std::filesystem::path(args.output);
  }
  o.interactive = train::Progress::is_terminal(stdout);
  BuiltinStream builtin(o.job);  // a stream job without a broker: one here, fed by a generator
  // SIGTERM (preemption): a checkpoint at the next step boundary, then exit 0.
  TerminationSignal terminate;
  if (!o.job.cluster.enabled) {
    train::SignalStop stop(terminate);
    o.stop = &stop;
    train_job(o);
    return 0;
  }
  // A cluster on this machine: its workers share the cores. Left to choose (intra 0), each
  // worker would take them all, and their OpenMP threads would fight over them.
  if (o.job.threads.intra == 0) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int each = std::max(1, cores / o.job.cluster.workers);
    o.job = config::parse_job_config(o.job.resolved_yaml, o.job.source_file, {fmt::format("threads.intra={}", each)});
    fmt::print("local cluster: {} worker(s) share {} core(s): threads.intra={} each (set threads.intra to choose)\n",
               o.job.cluster.workers, cores, each);
  }
  // Check what can be checked before starting processes.
  if (o.resume) train::check_resumable(o.output);
  else train::RunDirectory::check_new(o.output);
  cluster::LocalClusterOptions lc;
  lc.executable = std::filesystem::read_symlink("/proc/self/exe").string();
  lc.job_yaml = o.job.resolved_yaml;
  lc.run_dir = o.output.string();
  lc.resume = o.resume;
  lc.ps = o.job.cluster.ps;
  lc.workers = o.job.cluster.workers;
  lc.net = net_options(o.job.cluster);
  lc.terminate = &terminate;
  lc.preemption_grace = std::chrono::seconds(o.job.cluster.preemption_grace_s);
  return cluster::run_local_cluster(lc);
}

int run_coordinator(const CoordinatorArgs& args) {
  config::JobConfig job = config::load_job_config(args.config, args.overrides);
  TRIB_CHECK(job.cluster.enabled, InvalidArgument, "config {}: the coordinator needs a cluster section", args.config);
  if (!std::filesystem::exists(args.secret_file)) {
    std::ofstream(args.secret_file) << net::ClusterSecret::generate().to_hex() << "\n";
    std::filesystem::permissions(args.secret_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    fmt::print("wrote a new cluster secret to {}: copy it to every host of the job\n", args.secret_file);
  }
  auto ctx = net::NetContext::create(net::ClusterSecret::from_file(args.secret_file),
                                     net::PeerIdentity{"coordinator", 0, ""}, net_options(job.cluster));
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
  cluster::Coordinator coordinator(transport, {listen, job.resolved_yaml, run_dir, !args.resume.empty(), job.cluster.ps,
                                               job.cluster.workers});
  fmt::print("coordinator listening at {}; waiting for {} parameter server(s) and {} worker(s)\n",
             coordinator.address(), job.cluster.ps, job.cluster.workers);
  std::fflush(stdout);
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
      fmt::print("coordinator: {} connection(s) refused so far for a wrong cluster secret\n", refused);
      std::fflush(stdout);
    }
  }
  coordinator.shutdown_members();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  TRIB_CHECK(outcome.ok, Error, "the job failed: {}", outcome.failure);
  fmt::print("every worker finished\n");
  return 0;
}

int run_eval(const EvalArgs& args) {
  train::EvalOptions o;
  o.job = config::load_job_config(args.config, args.overrides);
  o.checkpoint = args.checkpoint;
  train::evaluate_checkpoint(o);
  return 0;
}

}  // namespace trib::app
