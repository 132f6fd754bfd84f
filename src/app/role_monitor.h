// A role's monitoring endpoint (monitoring.port): its metrics registry, labelled with the
// role and its index, and the HTTP server that serves it (trib/monitor/metrics_server.h).
// Absent when the job has monitoring off.
#pragma once

#include <memory>
#include <string>

#include "trib/config/job_config.h"
#include "trib/core/log.h"
#include "trib/monitor/metrics_registry.h"
#include "trib/monitor/metrics_server.h"
#include "trib/net/net_context.h"

namespace trib::app {

struct RoleMonitor {
  explicit RoleMonitor(monitor::Labels labels) : registry(std::move(labels)) {}
  monitor::MetricsRegistry registry;
  std::unique_ptr<monitor::MetricsServer> server;  // last: stops before the registry goes
};

// Starts serving role `role` number `index` of `job` on its port (role_port), or returns
// null when monitoring is off. A port in use throws Unavailable naming it. `pages`: more
// paths to serve (the launcher's dashboard).
std::unique_ptr<RoleMonitor> start_role_monitor(const config::JobConfig& job, const std::string& role, int index,
                                                int ps, const Log& log,
                                                std::map<std::string, monitor::Page> pages = {});

// The monitoring token of the job (monitoring.token_file, its first line), or "" for none.
std::string monitoring_token(const config::MonitoringConfig& m);

// Adds a transport's counters to `registry` at each scrape: bytes sent and received,
// connections refused for a wrong secret and malformed frames. `prefix` names the family
// ("trib_net" for a role's links, "trib_allreduce" for an allreduce worker's data plane).
void collect_net_stats(monitor::MetricsRegistry& registry, const std::string& prefix, std::shared_ptr<net::NetContext> net);

}  // namespace trib::app
