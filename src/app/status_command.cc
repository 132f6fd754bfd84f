// `trib status`: a thin command over monitor/cluster_status.h.
#include <cstdio>
#include <filesystem>
#include <thread>

#include "app/commands.h"
#include "app/role_monitor.h"
#include "trib/config/job_config.h"
#include "trib/core/error.h"
#include "trib/monitor/cluster_status.h"
#include "trib/net/host_port.h"

namespace trib::app {

namespace fs = std::filesystem;

int run_status(const StatusArgs& args) {
  std::function<nlohmann::json()> gather;
  if (fs::is_directory(args.target)) {
    // A run directory: its config.yaml says where every role serves.
    const fs::path yaml = fs::path(args.target) / "config.yaml";
    TRIB_CHECK(fs::exists(yaml), NotFound, "{} holds no config.yaml: expected a run directory (trib train --output)",
               args.target);
    const config::JobConfig job = config::load_job_config(yaml.string());
    TRIB_CHECK(job.monitoring.enabled(), InvalidArgument,
               "the job in {} has monitoring off: run it with monitoring.port set (or trib train --metrics-port N)",
               args.target);
    const std::string host = job.monitoring.bind == "0.0.0.0" ? "127.0.0.1" : job.monitoring.bind;
    const std::vector<monitor::Endpoint> roles = monitor::job_endpoints(
        host, job.monitoring.port, job.cluster.enabled, job.cluster.ps, job.cluster.max_workers_or_default());
    const std::string token = monitoring_token(job.monitoring);
    gather = [roles, token] { return monitor::gather_status(roles, token); };
  } else {
    // A launcher's (or coordinator's) monitoring address: its /api/status.
    const net::HostPort at = net::parse_host_port(args.target, "", {true, true, "trib status"});
    config::MonitoringConfig m;
    m.token_file = args.token_file;
    const std::string token = monitoring_token(m);
    gather = [at, token, target = args.target] {
      std::string error;
      std::optional<std::string> body =
          monitor::http_get(at.host, at.port, "/api/status", token, std::chrono::seconds(3), &error);
      TRIB_CHECK(body.has_value(), Unavailable, "no job answers at {}: {}", target, error);
      return nlohmann::json::parse(*body);
    };
  }
  for (;;) {
    const nlohmann::json st = gather();
    if (args.json) {
      fmt::print("{}\n", st.dump());
    } else {
      if (!args.once) fmt::print("\033[H\033[2J");  // a refreshed screen, not a scroll
      fmt::print("{}", monitor::format_status_table(st));
      if (st.value("ended", false)) fmt::print("the job ended\n");
    }
    std::fflush(stdout);
    if (args.once || args.json || st.value("ended", false)) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(args.interval_ms));
  }
}

}  // namespace trib::app
