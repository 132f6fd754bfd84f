#include "app/cluster_roles.h"

#include <cstdlib>

#include "trib/cluster/local_cluster.h"
#include "trib/cluster/member.h"
#include "trib/engine/context.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"
#include "trib/ps/strategy_ps.h"
#include "trib/train/model_graph.h"
#include "trib/train/trainer.h"

namespace trib::app {

using namespace std::chrono_literals;

net::ClusterSecret load_secret(const std::string& secret_file) {
  if (!secret_file.empty()) return net::ClusterSecret::from_file(secret_file);
  TRIB_CHECK(std::getenv(cluster::kSecretEnv) != nullptr, InvalidArgument,
             "no cluster secret: pass --secret-file FILE (hex) or set {}", cluster::kSecretEnv);
  return net::ClusterSecret::from_env(cluster::kSecretEnv);
}

net::NetOptions net_options(const config::ClusterConfig& c) {
  net::NetOptions o;
  o.heartbeat_interval = std::chrono::milliseconds(c.heartbeat_ms);
  o.peer_timeout = std::chrono::milliseconds(c.peer_timeout_ms);
  o.bind_host = c.bind_host;
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
  auto ctx = net::NetContext::create(load_secret(args.secret_file), net::PeerIdentity{role, 0, ""}, o);
  return std::make_shared<net::TcpTransport>(ctx);
}

}  // namespace

int run_ps_role(const RoleArgs& args) {
  net::NetOptions bootstrap;
  bootstrap.bind_host = args.bind_host;
  auto transport = transport_for("ps", args, bootstrap);
  cluster::Member member(transport, args.join, "ps", 60s);
  const cluster::Membership& m = member.membership();
  config::JobConfig job = config::parse_job_config(m.job_yaml, "the coordinator's job");
  std::vector<ps::VariableInfo> vars = trainable_variables(job);
  ps::PsServer server({m.index, m.workers, ps::parse_mode(job.strategy.mode), job.strategy.staleness,
                       job.strategy.backup_workers, vars, placement_for(job, vars), make_optimizer(job.optimizer)});
  auto serving = transport_for("ps", args, net_options(job.cluster));
  net::Handlers h;
  h.on_request = [&server](net::Message req, const net::PeerIdentity& from) { return server.handle(std::move(req), from); };
  auto listener = serving->listen(job.cluster.bind_host + ":0", std::move(h));
  member.store().set(fmt::format("ps/{}/address", m.index), listener->address());
  fmt::print("ps {} serving at {} ({} mode)\n", m.index, listener->address(), job.strategy.mode);
  std::fflush(stdout);
  while (!member.wait_for_shutdown(1s)) {
  }
  member.leave();
  return 0;
}

int run_worker_role(const RoleArgs& args) {
  net::NetOptions bootstrap;
  bootstrap.bind_host = args.bind_host;
  auto transport = transport_for("worker", args, bootstrap);
  cluster::Member member(transport, args.join, "worker", 60s);
  const cluster::Membership& m = member.membership();
  config::JobConfig job = config::parse_job_config(m.job_yaml, "the coordinator's job");

  train::TrainerOptions o;
  o.job = job;
  o.output = m.run_dir;
  o.resume = m.resume;
  o.distribution.worker_index = m.index;
  o.distribution.workers = m.workers;

  auto data_plane = transport_for("worker", args, net_options(job.cluster));
  std::vector<std::shared_ptr<net::Connection>> servers;
  if (job.strategy.name == "ps") {
    std::vector<ps::VariableInfo> vars = trainable_variables(job);
    ps::Placement placement = placement_for(job, vars);
    if (m.index == 0) fmt::print("placement ({}):\n{}\n", job.strategy.placement, placement.table(vars));
    for (int p = 0; p < m.ps; ++p) {
      std::string address = member.store().get(fmt::format("ps/{}/address", p), std::chrono::seconds(job.cluster.join_timeout_s));
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
  } else {
    throw InvalidArgument(fmt::format("strategy '{}' is not available to cluster workers yet", job.strategy.name));
  }
  train::train(o);
  member.leave();
  return 0;
}

}  // namespace trib::app
