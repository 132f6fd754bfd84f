// A parameter server's stats (PsStats) as metrics, read at each scrape.
#pragma once

#include "trib/monitor/metrics_registry.h"
#include "trib/ps/ps_server.h"

namespace trib::app {

// `server` must outlive `registry`'s renders.
void collect_ps_stats(monitor::MetricsRegistry& registry, const ps::PsServer& server);

}  // namespace trib::app
