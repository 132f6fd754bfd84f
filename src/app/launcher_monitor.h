// The launcher's (or `trib coordinator`'s) monitoring: its own metrics (generation, members,
// refused connections), the dashboard page at / and its data at /api/status: every role's
// metrics gathered (monitor/cluster_status.h) plus the roster and the placement table.
#pragma once

#include <memory>

#include "trib/cluster/coordinator.h"
#include "trib/config/job_config.h"
#include "trib/core/log.h"
#include "trib/net/net_context.h"

namespace trib::app {

// Null when monitoring is off. The handle keeps it serving; when it goes, /api/status says
// the job ended for a moment (an open dashboard shows it) before the server stops.
std::shared_ptr<void> start_launcher_monitor(const config::JobConfig& job, cluster::Coordinator& coordinator,
                                             std::shared_ptr<net::NetContext> net, const Log& log);

// Before a local cluster starts: every role's monitoring port is free, or Unavailable naming
// the first that is not.
void check_monitoring_ports(const config::JobConfig& job);

// The dashboard: one HTML page, its script and style inline (dashboard_page.cc).
const char* dashboard_page();

}  // namespace trib::app
