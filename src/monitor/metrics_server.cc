#include "trib/monitor/metrics_server.h"

#include <sys/socket.h>

#include <thread>

#include <httplib.h>

#include "trib/core/error.h"

namespace trib::monitor {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
};

MetricsServer::MetricsServer(MetricsServerOptions o, MetricsRegistry& registry)
    : impl_(std::make_unique<Impl>()), host_(o.host) {
  httplib::Server& s = impl_->server;
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a second server
  // binds a port already in use and the two share its requests.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // Two threads: scrapes are rare, and every role of a local cluster has its own server.
  s.new_task_queue = [] { return new httplib::ThreadPool(2); };
  if (!o.token.empty()) {
    s.set_pre_routing_handler([token = "Bearer " + o.token](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") == token) return httplib::Server::HandlerResponse::Unhandled;
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer");
      res.set_content("401 unauthorized: send Authorization: Bearer <monitoring token>\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    });
  }
  s.Get("/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  for (auto& [path, page] : o.pages)
    s.Get(path, [page](const httplib::Request&, httplib::Response& res) {
      res.set_content(page.body(), page.content_type);
      res.set_header("Cache-Control", "no-store");
    });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404) res.set_content(fmt::format("404 not found: {}\n", req.path), "text/plain");
  });
  if (o.port == 0) {
    port_ = s.bind_to_any_port(o.host);
    TRIB_CHECK(port_ > 0, Unavailable, "cannot listen for monitoring on {} ({})", o.host, o.port_setting);
  } else {
    TRIB_CHECK(s.bind_to_port(o.host, o.port), Unavailable,
               "monitoring port {} on {} is in use or cannot be bound ({}): choose another port or stop what holds it",
               o.port, o.host, o.port_setting);
    port_ = o.port;
  }
  impl_->thread = std::thread([&s] { s.listen_after_bind(); });
  // stop() before the loop runs would be lost (and the destructor's join hang).
  while (!s.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string MetricsServer::url() const {
  const bool v6 = host_.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}", v6 ? "[" : "", host_, v6 ? "]" : "", port_);
}

}  // namespace trib::monitor
