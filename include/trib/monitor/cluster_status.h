// A job's state gathered from its roles' metrics endpoints: what the launcher's dashboard
// polls (/api/status) and `trib status` prints. Each role is scraped once per call; one that
// does not answer is listed as unreachable, not an error.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trib/monitor/scrape.h"

namespace trib::monitor {

struct Endpoint {
  std::string role;  // coordinator, ps or worker
  int index = 0;
  std::string host;
  int port = 0;
};

// Where a job's roles serve their metrics (role_port): the coordinator on `base`, then
// `ps` servers and `max_workers` workers. `cluster` false: one process, a worker on `base`.
std::vector<Endpoint> job_endpoints(const std::string& host, int base, bool cluster, int ps, int max_workers);

// {"time": unix seconds, "generation": n, "members": [{"role", "index", "up", "url"}],
//  "workers": [{"index", "step", "loss", "lr", "images_per_s", "examples", "steps",
//               "wait_s", "compute_s", "exchange_s" (mean per step), "eval_loss", "eval_accuracy",
//               "checkpoints", "checkpoint_s", stream jobs: "consumer_lag" (over its
//               partitions), "freshness_s" (mean), "events_per_s"}],
//  "servers": [{"index", "bytes_in", "bytes_out", "requests", "updates", "late_drops",
//               "staleness": [count per bin]}]}
// Workers that never answered (indices beyond the running ones) are left out of "members".
nlohmann::json gather_status(const std::vector<Endpoint>& endpoints, const std::string& token,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

// Members ({"role", "index", ...} objects) in the order the dashboard and `trib status` list
// them: by role (coordinator, ps, worker), then index; a coordinator's roster comes in the
// order members joined.
void sort_members(nlohmann::json& members);

// The JSON above as a table, for `trib status`.
std::string format_status_table(const nlohmann::json& status);

}  // namespace trib::monitor
