#include "app/cluster_roles.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <thread>

#include "trib/cluster/launcher_env.h"
#include "trib/cluster/local_cluster.h"
#include "trib/cluster/member.h"
#include "trib/collectives/strategy_allreduce.h"
#include "trib/engine/context.h"
#include "trib/net/host_port.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"
#include "trib/ps/strategy_ps.h"
#include "trib/train/model_graph.h"
#include "trib/train/trainer.h"

namespace trib::app {

using namespace std::chrono_literals;

net::ClusterSecret load_secret(const RoleArgs& args) {
  return net::load_secret({args.secret_fd, args.secret_file, cluster::kSecretEnv});
}

net::NetOptions net_options(const config::JobConfig& job) {
  const config::ClusterConfig& c = job.cluster;
  net::NetOptions o;
  o.heartbeat_interval = std::chrono::milliseconds(c.heartbeat_ms);
  o.peer_timeout = std::chrono::milliseconds(c.peer_timeout_ms);
  if (!c.bind_host.empty()) o.bind_host = c.bind_host;
  o.encryption = job.security.encryption;
  return o;
}

namespace {

// The model's trainable variables, in gradient order: what the servers hold.
std::vector<ps::VariableInfo> trainable_variables(const config::JobConfig& job) {
  EngineContext engine(EngineOptions{1, 1});
  train::ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, job.training.seed};
  train::ModelGraph graph(spec, 1, false, engine);
  std::vector<ps::VariableInfo> out;
  for (const nn::Parameter& p : graph.trainable_parameters()) out.push_back({p.name, p.shape});
  return out;
}

ps::Placement placement_for(const config::JobConfig& job, const std::vector<ps::VariableInfo>& vars) {
  return ps::place(vars, job.cluster.ps, ps::parse_placement(job.strategy.placement), job.strategy.partition_bytes);
}

std::shared_ptr<net::Transport> transport_for(const std::string& role, const RoleArgs& args, const net::NetOptions& o) {
  net::NetOptions with_retry = o;  // a server not up yet, or busy with idle connections
  with_retry.connect_retry = std::chrono::seconds(args.timeout_s);
  auto ctx = net::NetContext::create(load_secret(args), net::PeerIdentity{role, 0, ""}, with_retry);
  return std::make_shared<net::TcpTransport>(ctx);
}

// Joins the coordinator, trying until --timeout; no single attempt may outlast it either.
std::unique_ptr<cluster::Member> join(const std::string& role, const RoleArgs& args) {
  TRIB_CHECK(args.timeout_s > 0, InvalidArgument, "--timeout must be at least 1 second, got {}", args.timeout_s);
  std::chrono::milliseconds timeout = std::chrono::seconds(args.timeout_s);
  net::NetOptions bootstrap;
  bootstrap.connect_timeout = std::min(bootstrap.connect_timeout, timeout);
  bootstrap.handshake_timeout = std::min(bootstrap.handshake_timeout, timeout);
  auto member = std::make_unique<cluster::Member>(transport_for(role, args, bootstrap), args.join, role, timeout, args.index);
  const cluster::Membership& m = member->membership();
  // A launch whose split disagrees with the job would leave roles waiting for each other;
  // leaving now makes the coordinator stop the job and tell everyone.
  TRIB_CHECK(args.expected_ps < 0 || (m.ps == args.expected_ps && m.workers == args.expected_workers),
             InvalidArgument,
             "this launch makes {} parameter server(s) and {} worker(s) (--ps {}), but the job at {} has {} and {}",
             args.expected_ps, args.expected_workers, args.expected_ps, args.join, m.ps, m.workers);
  return member;
}

bool is_wildcard(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "::"; }

// The host other roles should dial. A concrete bind address is it; a wildcard one (0.0.0.0
// in a container or on a multi-homed host) says where to listen, not where to be reached,
// so take the local address this host uses to reach the coordinator: the kernel picks it
// when a UDP socket is connected there, and connecting a UDP socket sends nothing.
std::string reachable_host(const std::string& bind_host, const std::string& coordinator) {
  if (!is_wildcard(bind_host)) return bind_host;
  net::HostPort target = net::parse_host_port(coordinator, "", {true, true, "--join"});
  const std::string& host = target.host;
  const std::string port = std::to_string(target.port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  TRIB_CHECK(getaddrinfo(host.c_str(), port.c_str(), &hints, &found) == 0 && found != nullptr, Unavailable,
             "cannot resolve the coordinator's address {}", coordinator);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, freeaddrinfo);
  int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  bool ok = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) ::close(fd);
  TRIB_CHECK(ok, Unavailable, "cannot tell which local address reaches the coordinator at {}: pass --bind ADDRESS",
             coordinator);
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = local.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                                                : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
  ::inet_ntop(local.ss_family, raw, text, sizeof text);
  return text;
}

// Where this role's servers listen: --bind, else the job's cluster.bind_host, else the
// address of the interface that reaches the coordinator (127.0.0.1 for a local cluster),
// so that roles on several hosts find each other with nothing set by hand.
std::string bind_host(const RoleArgs& args, const config::JobConfig& job) {
  if (!args.bind_host.empty()) return args.bind_host;
  if (!job.cluster.bind_host.empty()) return job.cluster.bind_host;
  return reachable_host("0.0.0.0", args.join);
}

// What other roles dial for a server bound at `bind` and listening at `bound`.
std::string published_address(const std::string& bind, const RoleArgs& args, const std::string& bound) {
  return net::format_host_port(reachable_host(bind, args.join), net::parse_host_port(bound).port);
}

// Parameter server p's address once it publishes it. If the coordinator stops the job first
// (another role failed), say so rather than report the connection it then closes.
std::string ps_address(cluster::Member& member, int p, std::chrono::seconds timeout) {
  std::string key = fmt::format("ps/{}/address", p);
  auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::optional<std::string> address;
    try {
      address = member.store().try_get(key);
    } catch (const Error&) {
      if (!member.shutdown_requested()) throw;
    }
    TRIB_CHECK(!member.shutdown_requested(), Unavailable,
               "the coordinator at {} stopped the job before training began: another role failed (its log says which)",
               member.coordinator_address());
    if (address) return *address;
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "parameter server {} did not publish its address within {} s (cluster.join_timeout_s)", p,
               timeout.count());
    std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

int run_ps_role(const RoleArgs& args) {
  std::unique_ptr<cluster::Member> member = join("ps", args);
  const cluster::Membership& m = member->membership();
  config::JobConfig job = config::parse_job_config(m.job_yaml, "the coordinator's job");
  std::vector<ps::VariableInfo> vars = trainable_variables(job);
  ps::PsServer server({m.index, m.workers, ps::parse_mode(job.strategy.mode), job.strategy.staleness,
                       job.strategy.backup_workers, vars, placement_for(job, vars), make_optimizer(job.optimizer)});
  // Pushed gradients are received into recycled buffers: no page faults per step.
  auto receive_pool = std::make_shared<PoolAllocator>();
  net::NetOptions serving_options = net_options(job);
  serving_options.allocator = receive_pool.get();
  auto serving = transport_for("ps", args, serving_options);
  net::Handlers h;
  h.on_request = [&server](net::Message req, const net::PeerIdentity& from) { return server.handle(std::move(req), from); };
  // With a static spec, server i listens on the port its entry lists; else any free port.
  std::string bind = bind_host(args, job);
  bool listed = job.cluster.has_spec && m.index < static_cast<int>(job.cluster.spec.ps.size());
  auto listener = serving->listen(net::format_host_port(bind, listed ? job.cluster.spec.ps[m.index].port : 0), std::move(h));
  std::string address = published_address(bind, args, listener->address());
  member->store().set(fmt::format("ps/{}/address", m.index), address);
  fmt::print("ps {} serving at {} ({} mode)\n", m.index, address, job.strategy.mode);
  std::fflush(stdout);
  while (!member->wait_for_shutdown(1s)) {
  }
  member->leave();
  return 0;
}

int run_worker_role(const RoleArgs& args) {
  std::unique_ptr<cluster::Member> member = join("worker", args);
  const cluster::Membership& m = member->membership();
  config::JobConfig job = config::parse_job_config(m.job_yaml, "the coordinator's job");

  train::TrainerOptions o;
  o.job = job;
  o.output = m.run_dir;
  o.resume = m.resume;
  o.distribution.worker_index = m.index;
  o.distribution.workers = m.workers;
  // Stream jobs: workers hand their Kafka offsets to the chief through the coordinator's store.
  o.distribution.publish = [&member](const std::string& key, const std::string& value) { member->store().set(key, value); };
  o.distribution.lookup = [&member](const std::string& key) { return member->store().try_get(key); };

  auto data_plane = transport_for("worker", args, net_options(job));
  std::vector<std::shared_ptr<net::Connection>> servers;
  if (job.strategy.name == "ps") {
    std::vector<ps::VariableInfo> vars = trainable_variables(job);
    ps::Placement placement = placement_for(job, vars);
    if (m.index == 0) fmt::print("placement ({}):\n{}\n", job.strategy.placement, placement.table(vars));
    for (int p = 0; p < m.ps; ++p) {
      std::string address = ps_address(*member, p, std::chrono::seconds(job.cluster.join_timeout_s));
      servers.push_back(data_plane->connect(address));
    }
    o.distribution.make_update = [&, vars, placement](const std::vector<std::string>&, std::shared_ptr<const Optimizer> opt,
                                                      std::shared_ptr<const Schedule> schedule) {
      ps::PsUpdateOptions po;
      po.worker_index = m.index;
      po.workers = m.workers;
      po.mode = ps::parse_mode(job.strategy.mode);
      po.period = job.strategy.period;
      po.variables = vars;
      po.placement = placement;
      po.servers = servers;
      po.optimizer = std::move(opt);
      po.schedule = std::move(schedule);
      return std::make_unique<ps::PsUpdate>(std::move(po));
    };
  } else if (job.strategy.name == "allreduce") {
    // Every worker listens, publishes its address, and the group forms once all are known.
    std::string bind = bind_host(args, job);
    auto endpoint = std::make_shared<collectives::Endpoint>(
        collectives::Endpoint::listen(data_plane, net::format_host_port(bind, 0)));
    member->store().set(fmt::format("allreduce/{}/address", m.index),
                        published_address(bind, args, endpoint->address()));
    collectives::GroupOptions g;
    g.rank = m.index;
    g.size = m.workers;
    for (int w = 0; w < m.workers; ++w)
      g.addresses.push_back(member->store().get(fmt::format("allreduce/{}/address", w),
                                               std::chrono::seconds(job.cluster.join_timeout_s)));
    std::shared_ptr<collectives::Group> group = collectives::Group::form(std::move(*endpoint), g);
    // The linear scaling rule with warm-up, on by default for this strategy.
    o.job.schedule.linear_scaling = true;
    if (o.job.schedule.warmup_steps == 0) o.job.schedule.warmup_steps = 100;
    // Goyal et al.: the warm-up starts from the single-worker rate.
    if (o.job.schedule.warmup_start_factor == 0) o.job.schedule.warmup_start_factor = 1.0f / m.workers;
    const double bucket_mb = job.strategy.bucket_mb;
    const collectives::Compression compression = collectives::parse_compression(job.strategy.compression);
    const double clip = job.training.clip_norm;
    o.distribution.make_update = [group, bucket_mb, compression, clip](
                                     const std::vector<std::string>& trainable, std::shared_ptr<const Optimizer> opt,
                                     std::shared_ptr<const Schedule> schedule) -> std::unique_ptr<train::UpdateStrategy> {
      collectives::AllreduceUpdateOptions ao;
      ao.group = group;
      ao.parameters = trainable;
      ao.optimizer = std::move(opt);
      ao.schedule = std::move(schedule);
      ao.bucket_bytes = static_cast<std::size_t>(bucket_mb * (1 << 20));
      ao.compression = compression;
      ao.clip_norm = clip;
      // Its start() gives every worker the chief's step, variables and optimizer state.
      return std::make_unique<collectives::AllreduceUpdate>(std::move(ao));
    };
  } else {
    throw InvalidArgument(fmt::format("strategy '{}' is not available to cluster workers", job.strategy.name));
  }
  train::train(o);
  member->leave();
  return 0;
}

int run_node_role(const NodeArgs& args) {
  cluster::LauncherRank r = cluster::launcher_rank();
  TRIB_CHECK(args.ps >= 0 && args.ps < r.size, InvalidArgument,
             "--ps {} leaves no workers among the {} processes of this launch ({}={})", args.ps, r.size,
             r.size_variable, r.size);
  bool server = r.rank < args.ps;
  fmt::print("node: rank {} of {} ({}) is a {}\n", r.rank, r.size, r.launcher, server ? "parameter server" : "worker");
  std::fflush(stdout);
  RoleArgs role = args.role;
  role.expected_ps = args.ps;
  role.expected_workers = r.size - args.ps;
  if (role.index < 0) role.index = server ? r.rank : r.rank - args.ps;  // rank order is role order
  return server ? run_ps_role(role) : run_worker_role(role);
}

}  // namespace trib::app
