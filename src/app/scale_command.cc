// `trib scale RUN_DIR --workers N`: the request goes to the launcher of the local job through
// a file in its run directory (cluster/scale_request.h); the command checks it against the
// job first, so that a request the launcher would refuse is refused here, with the reason.
#include <filesystem>
#include <thread>

#include "app/commands.h"
#include "cluster/scale_request.h"
#include "trib/config/job_config.h"
#include "trib/core/error.h"

namespace trib::app {

namespace fs = std::filesystem;

int run_scale(const ScaleArgs& args, const Log& log) {
  const fs::path run_dir = args.run_dir;
  const fs::path config = run_dir / "config.yaml";
  TRIB_CHECK(fs::exists(config), InvalidArgument,
             "{} is not the run directory of a running job (no config.yaml; the chief writes it when it starts)",
             run_dir.string());
  const config::JobConfig job = config::load_job_config(config.string(), {});
  const bool ps = job.strategy.name == config::StrategyName::ps;
  const bool allreduce_files = job.strategy.name == config::StrategyName::allreduce && !job.data.stream();
  TRIB_CHECK(job.cluster.enabled && (ps || allreduce_files), InvalidArgument,
             "{}: only a parameter-server cluster job (strategy.name: ps) or an allreduce job on files changes its "
             "worker count while it runs",
             config.string());
  // An allreduce group reshards at an epoch boundary; a ps job gives data beyond its starting
  // workers' fixed shards only in dynamic chunks.
  const int limit = allreduce_files || (!job.data.stream() && job.data.assignment == "dynamic")
                        ? job.cluster.max_workers_or_default()
                        : job.cluster.workers;
  TRIB_CHECK(args.workers >= 1 && args.workers <= limit, InvalidArgument,
             "--workers {}: the job in {} runs 1..{} worker(s){}", args.workers, run_dir.string(), limit,
             limit < job.cluster.max_workers_or_default()
                 ? " (only data.assignment: dynamic gives data to workers beyond cluster.workers)"
                 : " (cluster.max_workers)");
  cluster::request_scale(run_dir, args.workers);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(args.timeout_s);
  while (cluster::scale_request_pending(run_dir)) {
    if (std::chrono::steady_clock::now() > until) {
      std::error_code ignored;
      fs::remove(cluster::scale_request_path(run_dir), ignored);
      throw Unavailable(fmt::format("no launcher took the request within {} s: is `trib train` running with --output {}?",
                                    args.timeout_s, run_dir.string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  log.info("the launcher of {} took the request: {} worker(s)", run_dir.string(), args.workers);
  return 0;
}

}  // namespace trib::app
