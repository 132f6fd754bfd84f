// A process's monitoring endpoint: an HTTP server (Debian's cpp-httplib) that serves its
// MetricsRegistry at /metrics in the Prometheus text format, and whatever other pages the
// process adds (the launcher's dashboard and its JSON). It binds to loopback unless told
// otherwise; with a token, every request must carry "Authorization: Bearer <token>" (401
// otherwise). Any other path is a 404.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "trib/monitor/metrics_registry.h"

namespace trib::monitor {

struct Page {
  std::string content_type;
  std::function<std::string()> body;  // made at each request, on a server thread
};

struct MetricsServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;        // 0: any free port
  std::string token;   // empty: no authentication
  std::map<std::string, Page> pages;  // by path, besides /metrics
  // Names the setting in the error for a port in use: "monitoring.port", "--metrics-port".
  std::string port_setting = "monitoring.port";
};

class MetricsServer {
 public:
  // Binds and starts serving. A port that cannot be bound (in use) throws Unavailable in one
  // line naming the port and the setting that chose it.
  MetricsServer(MetricsServerOptions options, MetricsRegistry& registry);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://host:port

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

// The monitoring port of role `role` (`coordinator`, `ps`, `worker`) number `index` for a job
// whose base port is `base`: the launcher or coordinator `base`, parameter server i
// `base + 1 + i`, worker i `base + 1 + ps + i` (every worker index up to max_workers).
int role_port(int base, const std::string& role, int index, int ps);

}  // namespace trib::monitor
