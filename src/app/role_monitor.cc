#include "app/role_monitor.h"

#include <fstream>

#include "trib/core/error.h"

namespace trib::app {

std::string monitoring_token(const config::MonitoringConfig& m) {
  if (m.token_file.empty()) return "";
  std::ifstream in(m.token_file);
  TRIB_CHECK(in.good(), NotFound, "monitoring.token_file {} cannot be read", m.token_file);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t')) token.pop_back();
  TRIB_CHECK(!token.empty(), InvalidArgument, "monitoring.token_file {} is empty: expected a token on its first line",
             m.token_file);
  return token;
}

std::unique_ptr<RoleMonitor> start_role_monitor(const config::JobConfig& job, const std::string& role, int index,
                                                int ps, const Log& log, std::map<std::string, monitor::Page> pages) {
  if (!job.monitoring.enabled()) return nullptr;
  auto m = std::make_unique<RoleMonitor>(monitor::Labels{{"role", role}, {"index", std::to_string(index)}});
  monitor::MetricsServerOptions o;
  o.host = job.monitoring.bind;
  // One process (no cluster) serves on the base port itself.
  o.port = job.cluster.enabled ? monitor::role_port(job.monitoring.port, role, index, ps) : job.monitoring.port;
  o.token = monitoring_token(job.monitoring);
  o.pages = std::move(pages);
  o.port_setting = job.cluster.enabled && o.port != job.monitoring.port
                       ? fmt::format("{} {}: monitoring.port {} + {}", role, index, job.monitoring.port,
                                     o.port - job.monitoring.port)
                       : "monitoring.port, --metrics-port";
  m->server = std::make_unique<monitor::MetricsServer>(std::move(o), m->registry);
  log.info("{} {}: metrics at {}/metrics", role, index, m->server->url());
  return m;
}

void collect_net_stats(monitor::MetricsRegistry& registry, const std::string& prefix, std::shared_ptr<net::NetContext> net) {
  registry.add_collector([prefix, net](monitor::MetricsRegistry& r) {
    const net::NetStatsSnapshot s = net->stats().snapshot();
    r.counter(prefix + "_bytes_total", "Bytes on this process's links, by direction.", {{"direction", "sent"}})
        .set_total(double(s.bytes_sent));
    r.counter(prefix + "_bytes_total", "", {{"direction", "received"}}).set_total(double(s.bytes_received));
    r.counter(prefix + "_refused_connections_total", "Connections refused for a wrong cluster secret.")
        .set_total(double(s.auth_failures));
    r.counter(prefix + "_malformed_frames_total", "Frames refused: altered, replayed or malformed.")
        .set_total(double(s.mac_failures + s.sequence_failures + s.malformed_frames));
  });
}

}  // namespace trib::app
