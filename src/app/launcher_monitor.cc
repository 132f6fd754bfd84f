#include "app/launcher_monitor.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <atomic>
#include <thread>

#include "app/role_monitor.h"
#include "trib/monitor/cluster_status.h"
#include "trib/net/host_port.h"
#include "trib/strategy/make_strategy.h"

namespace trib::app {

namespace {

struct LauncherMonitor {
  std::atomic<bool> ended{false};
  std::unique_ptr<RoleMonitor> role;
  ~LauncherMonitor() {
    // An open dashboard polls every second: give it one poll that says the job ended.
    ended = true;
    if (role) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
};

std::string placement_text(const config::JobConfig& job) {
  if (job.strategy.name != config::StrategyName::ps) return "";
  try {
    std::vector<ps::VariableInfo> vars = strategy::trainable_variables(job);
    return strategy::make_placement(job, vars).table(vars);
  } catch (const std::exception& e) {
    return e.what();
  }
}

// A job on several hosts (monitoring.bind not loopback): each role's host is the one its
// connection to the coordinator comes from.
void locate(std::vector<monitor::Endpoint>& endpoints, const cluster::RosterView& roster) {
  for (monitor::Endpoint& e : endpoints)
    for (const cluster::RosterEntry& m : roster.members)
      if (m.role == e.role && m.index == e.index && !m.address.empty()) {
        try {
          e.host = net::parse_host_port(m.address).host;
        } catch (const std::exception&) {
        }
      }
}

}  // namespace

void check_monitoring_ports(const config::JobConfig& job) {
  if (!job.monitoring.enabled()) return;
  const config::ClusterConfig& c = job.cluster;
  for (const monitor::Endpoint& e :
       monitor::job_endpoints(job.monitoring.bind, job.monitoring.port, c.enabled, c.ps, c.max_workers_or_default())) {
    if (e.role == "coordinator") continue;  // the launcher binds it itself, first
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(e.port));
    const bool v4 = ::inet_pton(AF_INET, e.host.c_str(), &a.sin_addr) == 1;
    const bool ok = !v4 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    TRIB_CHECK(ok, Unavailable,
               "monitoring port {} ({} {}: monitoring.port {} + {}) is in use on {}: choose another monitoring.port "
               "(--metrics-port) or stop what holds it",
               e.port, e.role, e.index, job.monitoring.port, e.port - job.monitoring.port, e.host);
  }
}

std::shared_ptr<void> start_launcher_monitor(const config::JobConfig& job, cluster::Coordinator& coordinator,
                                             std::shared_ptr<net::NetContext> net, const Log& log) {
  if (!job.monitoring.enabled()) return nullptr;
  auto state = std::make_shared<LauncherMonitor>();
  const config::ClusterConfig& c = job.cluster;
  std::vector<monitor::Endpoint> roles =
      monitor::job_endpoints(job.monitoring.bind, job.monitoring.port, true, c.ps, c.max_workers_or_default());
  roles.erase(roles.begin());  // itself: its pages are served by the thread asking
  const std::string token = monitoring_token(job.monitoring);
  const bool loopback = job.monitoring.bind.starts_with("127.") || job.monitoring.bind == "localhost" ||
                        job.monitoring.bind == "::1";
  const std::string placement = placement_text(job);
  cluster::Coordinator* coord = &coordinator;
  LauncherMonitor* self = state.get();
  std::map<std::string, monitor::Page> pages;
  pages["/"] = {"text/html; charset=utf-8", [] { return std::string(dashboard_page()); }};
  pages["/api/status"] = {"application/json", [=, name = job.name, strategy = config::to_string(job.strategy.name)] {
                            // Roles on other hosts are scraped where their membership comes from.
                            std::vector<monitor::Endpoint> at = roles;
                            std::optional<cluster::RosterView> roster;
                            try {
                              roster = coord->roster();
                            } catch (const std::exception&) {
                            }
                            if (roster && !loopback) locate(at, *roster);
                            nlohmann::json st = monitor::gather_status(at, token);
                            st["job"] = name;
                            st["strategy"] = strategy;
                            st["ended"] = self->ended.load();
                            st["placement"] = placement;
                            nlohmann::json members = nlohmann::json::array();
                            if (roster) {
                              st["generation"] = roster->generation;
                              for (const auto& m : roster->members)
                                members.push_back({{"role", m.role}, {"index", m.index}, {"state", "running"}});
                              for (const auto& l : roster->lost)
                                members.push_back(
                                    {{"role", l.role}, {"index", l.index}, {"state", "lost"}, {"reason", l.reason}});
                            }
                            monitor::sort_members(members);
                            st["roster"] = members;
                            return st.dump();
                          }};
  state->role = start_role_monitor(job, "coordinator", 0, c.ps, log, std::move(pages));
  monitor::MetricsRegistry& reg = state->role->registry;
  collect_net_stats(reg, "trib_net", net);
  reg.add_collector([coord](monitor::MetricsRegistry& r) {
    try {
      const cluster::RosterView v = coord->roster();
      r.gauge("trib_generation", "The membership generation.").set(double(v.generation));
      std::map<std::string, int> count{{"ps", 0}, {"worker", 0}};
      for (const auto& m : v.members) ++count[m.role];
      for (const auto& [role, n] : count)
        r.gauge("trib_members", "Members holding an index, by role.", {{"member_role", role}}).set(n);
      r.gauge("trib_members_lost", "Indices lost and not taken again.").set(double(v.lost.size()));
    } catch (const std::exception&) {
    }
  });
  log.info("dashboard at {}/", state->role->server->url());
  return state;
}

}  // namespace trib::app
