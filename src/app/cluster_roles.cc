#include "app/cluster_roles.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "app/allreduce_membership.h"
#include "app/cluster_stop.h"
#include "app/fault_hooks.h"
#include "app/rejoin_exec.h"
#include "cluster/launcher_env.h"
#include "trib/cluster/local_cluster.h"
#include "trib/cluster/member.h"
#include "trib/cluster/membership_keys.h"
#include "trib/data/dataset_cursor.h"
#include "app/net_log.h"
#include "app/pipeline_role.h"
#include "app/ps_metrics.h"
#include "app/role_monitor.h"
#include "app/ps_replica_role.h"
#include "app/train_job.h"
#include "trib/net/handler_gate.h"
#include "trib/net/host_port.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"
#include "trib/ps/data_claim.h"
#include "trib/ps/ps_server.h"
#include "trib/strategy/make_strategy.h"
#include "trib/stream/stream_position.h"
#include "trib/train_stream/stream_trainer.h"

namespace trib::app {

using namespace std::chrono_literals;

net::ClusterSecret load_secret(const RoleArgs& args) {
  if (args.secret) return *args.secret;
  return net::load_secret({args.secret_fd, args.secret_file, cluster::kSecretEnv});
}

namespace {

RoleArgs with_secret(const RoleArgs& args) {
  RoleArgs resolved = args;
  resolved.secret = load_secret(args);
  return resolved;
}

}  // namespace

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

// Where a worker's cursors only grow, they compare and merge: a push its server applied
// already, replayed by a worker relaunched at an older server's cursor, is acknowledged only.
// A stream job whose partitions the job assigns: the cursor is the worker's applied Kafka
// progress. A file job in fixed shards: its place in its shard of the epoch (dataset_cursor.h).
// Not under data.assignment: dynamic (server 0 hands a lost worker's unread chunks to others)
// nor averaging (a push is the worker's parameters, not a batch).
ps::DataCursors data_cursors(const config::JobConfig& job) {
  if (job.data.stream()) {
    if (!train_stream::ps_chief_rejoins(job)) return {};
    return {stream::cursor_covers, stream::merge_cursors};
  }
  if (job.strategy.name != config::StrategyName::ps || job.data.assignment == "dynamic" ||
      job.strategy.mode == config::PsMode::averaging)
    return {};
  return {data::dataset_cursor_covers, data::dataset_cursor_merge};
}

std::shared_ptr<net::Transport> transport_for(const std::string& role, const RoleArgs& args, const net::NetOptions& o,
                                              const Log& log, int index = 0, bool retry = true) {
  net::NetOptions with_retry = o;  // a server not up yet, or busy with idle connections
  // The coordinator's member retries on its own (and must say so at each attempt).
  with_retry.connect_retry = retry ? std::chrono::seconds(args.timeout_s) : std::chrono::seconds(0);
  auto ctx = net::NetContext::create(load_secret(args), net::PeerIdentity{role, index, ""}, with_retry, net_log_sink(log));
  return std::make_shared<net::TcpTransport>(ctx);
}

// Joins the coordinator, trying until --timeout; no single attempt may outlast it either.
std::unique_ptr<cluster::Member> join(const std::string& role, const RoleArgs& args, const Log& log) {
  TRIB_CHECK(args.timeout_s > 0, InvalidArgument, "--timeout must be at least 1 second, got {}", args.timeout_s);
  std::chrono::milliseconds timeout = std::chrono::seconds(args.timeout_s);
  net::NetOptions bootstrap;
  bootstrap.connect_timeout = std::min(bootstrap.connect_timeout, timeout);
  bootstrap.handshake_timeout = std::min(bootstrap.handshake_timeout, timeout);
  // The index asked for, or -1 ("worker at ADDRESS" in the coordinator's log) until it assigns one.
  auto member = std::make_unique<cluster::Member>(transport_for(role, args, bootstrap, log, args.index, false), args.join, role,
                                                  timeout, args.index);
  const cluster::Membership& m = member->membership();
  // Without its coordinator the data plane goes on; the member reconnects, and gives up
  // after cluster.coordinator_timeout_s.
  const config::JobConfig job = config::parse_job_config(m.job_yaml, "the coordinator's job");
  cluster::ReconnectOptions reconnect{.give_up = std::chrono::seconds(job.cluster.coordinator_timeout_s),
                                      .info = [log](const std::string& line) { log.info("{}", line); }};
  // A worker evicted while stopped, thawed, rejoins as a new member (a server is relaunched
  // by its launcher: with backups it comes back as one).
  if (role == "worker")
    reconnect.evicted = [how = RejoinExec{.max_rejoins = job.cluster.max_restarts,
                                          .secret_fd = args.secret_fd,
                                          .secret_hex = load_secret(args).to_hex()}](const std::string& why) {
      rejoin_as_new_member(why, how);
    };
  member->set_reconnect(std::move(reconnect));
  // A launch whose split disagrees with the job would leave roles waiting for each other;
  // leaving now makes the coordinator stop the job and tell everyone.
  TRIB_CHECK(args.expected_ps < 0 ||
                 (m.ps == args.expected_ps && (args.expected_workers < 0 || m.workers == args.expected_workers)),
             InvalidArgument,
             "this launch makes {} parameter server(s){} (--ps {}), but the job at {} has {} and {} worker(s)",
             args.expected_ps,
             args.expected_workers < 0 ? "" : fmt::format(" and {} worker(s)", args.expected_workers),
             args.expected_ps, args.join, m.ps, m.workers);
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

// Where a worker reaches a relaunched parameter server: each dial is tried once (the address
// may change under it, when the new server listens on a new port), again until `timeout`.
// The job stopping (the coordinator's shutdown) ends the wait.
ps::PsRecoveryOptions ps_recovery(cluster::Member& member, const RoleArgs& args, const config::JobConfig& job,
                                  const Log& log) {
  auto ctx = net::NetContext::create(load_secret(args), net::PeerIdentity{"worker", member.membership().index, ""}, net_options(job),
                                     net_log_sink(log));
  auto redial = std::make_shared<net::TcpTransport>(ctx);
  cluster::Member* m = &member;
  auto check_running = [m] {
    if (m->shutdown_requested())
      throw Error(fmt::format("the coordinator at {} stopped the job while this worker was reaching the parameter "
                              "servers again: another role failed (the coordinator's log says which)",
                              m->coordinator_address()));
  };
  ps::PsRecoveryOptions r;
  r.reconnect = [m, redial, check_running](int p, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    const std::string key = fmt::format("ps/{}/address", p);
    std::string last_error = "no address published";
    for (;;) {
      check_running();
      if (std::optional<std::string> address = m->store().try_get(key)) {
        try {
          return redial->connect(*address);
        } catch (const Error& e) {
          last_error = fmt::format("{}: {}", *address, e.what());
        }
      }
      TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
                 "parameter server {} did not come back within {} s ({})", p,
                 std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), last_error);
      std::this_thread::sleep_for(100ms);
    }
  };
  r.publish = [m](const std::string& key, const std::string& value) { m->store().set(key, value); };
  r.lookup = [m, check_running](const std::string& key) {
    check_running();
    return m->store().try_get(key);
  };
  r.given_up_workers = [m, limit = job.cluster.max_workers_or_default()] {
    int n = 0;
    for (int w = 0; w < limit; ++w) n += m->store().try_get(cluster::membership_key::given_up(w)) == "1";
    return n;
  };
  r.generation = [m] {
    std::optional<std::string> g = m->store().try_get(cluster::membership_key::kGeneration);
    return g && !g->empty() ? std::stoll(*g) : m->generation();
  };
  if (m->membership().index == 0) r.checkpoints = (std::filesystem::path(m->membership().run_dir) / "checkpoints").string();
  r.timeout = std::chrono::seconds(std::max(60, job.cluster.join_timeout_s));
  if (job.strategy.ps_replicas > 0) r.backup = ps_backup_dial(member, redial);  // strategy.ps_replicas
  return r;
}

// The generation this member last heard of, at each scrape.
void add_generation(monitor::MetricsRegistry& registry, const cluster::Member& member) {
  registry.add_collector([&member](monitor::MetricsRegistry& r) {
    r.gauge("trib_generation", "The membership generation this process last heard of.").set(double(member.generation()));
  });
}

}  // namespace

int run_ps_role(const RoleArgs& given, const Log& log) {
  // Bad text fails before joining: once a member, its loss could end the job first.
  check_fault_variable();
  const RoleArgs args = with_secret(given);
  std::unique_ptr<cluster::Member> member = join("ps", args, log);
  const cluster::Membership& m = member->membership();
  config::JobConfig job = config::parse_job_config(m.job_yaml, "the coordinator's job");
  // Per-worker state for every index the job may admit (cluster.max_workers); the ones beyond
  // its starting workers are waited for once a worker joins with one.
  auto options_for = [&job, &m](int index) {
    ps::PsServerOptions o = strategy::ps_server_options(job, index, m.max_workers);
    o.present_workers = m.workers;
    o.cursors = data_cursors(job);
    o.dispense_data = index == 0 && job.strategy.name == config::StrategyName::ps && !job.data.stream() &&
                      job.data.assignment == "dynamic";
    return o;
  };
  ps::PsServer server(options_for(m.index));
  server.set_log([](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  // Pushed gradients are received into recycled buffers: no page faults per step.
  auto receive_pool = std::make_shared<PoolAllocator>();
  net::NetOptions serving_options = net_options(job);
  serving_options.allocator = receive_pool.get();
  serving_options.max_frame_bytes = std::min(serving_options.max_frame_bytes, server.max_request_bytes());
  // Named by its index: a worker's error then says which server it lost.
  auto serving = transport_for("ps", args, serving_options, log, m.index);
  // strategy.ps_replicas: the backup this server holds, and the link to its own shard's.
  // Before the membership reaches the server: its events are forwarded, and the backups of
  // the other servers must be listening by then.
  std::unique_ptr<PsReplicaRole> replica;
  // A server of this index served before (this process was relaunched): its shard is served by
  // the backup that took it over, so it becomes a backup (app/ps_replica_role.h).
  const bool served_before = member->store().try_get(fmt::format("ps/{}/address", m.index)).has_value();
  const bool relaunched_backup = job.strategy.ps_replicas > 0 && served_before;
  if (job.strategy.ps_replicas > 0)
    replica = start_ps_replica(
        *member, server,
        {m.index, m.ps, relaunched_backup, options_for,
         [&args, &log, &m](const net::NetOptions& o) { return transport_for("ps", args, o, log, m.index); }, net_options(job), bind_host(args, job),
         [&args, &job](const std::string& bound) { return published_address(bind_host(args, job), args, bound); },
         std::chrono::seconds(std::max(60, job.cluster.join_timeout_s)),
         [](const std::string& line) {
           fmt::print("{}\n", line);
           std::fflush(stdout);
         }});
  // The listener's handlers reach the server through a gate shut before the server goes: an
  // accepted connection's executor can still be serving after the listener was released.
  auto gate = net::open_handler_gate(&server);
  net::Handlers h;
  h.on_request = [gate, index = m.index, fault = ps_fault_hook(m.index, served_before, server)](
                     net::Message req, const net::PeerIdentity& from) {
    auto serving_server = gate->enter();
    TRIB_CHECK(static_cast<bool>(serving_server), Unavailable, "ps {} is shutting down", index);
    if (fault) fault(req);  // tests only (app/fault_hooks.h)
    return serving_server->handle(std::move(req), from);
  };
  // Membership changes reach the server: a lost worker holds nobody back, and what its
  // process sends after it was evicted is refused.
  member->subscribe([&server](const cluster::RosterView& roster) {
    for (const cluster::LostEntry& l : roster.lost)
      if (l.role == "worker") server.worker_lost(l.index, l.generation);
    for (const cluster::RosterEntry& e : roster.members)
      if (e.role == "worker") server.worker_joined(e.index, e.incarnation);
  });
  // A worker's connection closing is how this server learns it is gone: it waits for it no
  // more, and re-admits it if it comes back (relaunched).
  h.on_close = [gate](const net::PeerIdentity& peer, std::string_view) {
    if (auto serving_server = gate->enter()) serving_server->connection_closed(peer);
  };
  // With a static spec, server i listens on the port its entry lists; else any free port.
  std::string bind = bind_host(args, job);
  bool listed = job.cluster.has_spec && m.index < static_cast<int>(job.cluster.spec.ps.size());
  auto listener = serving->listen(net::format_host_port(bind, listed ? job.cluster.spec.ps[m.index].port : 0), std::move(h));
  // monitoring.port: this server's metrics; it goes before the server and the member it reads.
  std::unique_ptr<RoleMonitor> monitor = start_role_monitor(job, "ps", m.index, m.ps, log);
  if (monitor) {
    collect_ps_stats(monitor->registry, server);
    collect_net_stats(monitor->registry, "trib_net", serving->context());
    add_generation(monitor->registry, *member);
  }
  std::string address = published_address(bind, args, listener->address());
  if (relaunched_backup)
    log.info("ps {} relaunched: its shard is served by the backup that took it over; this server holds backups only",
             m.index);
  else
    member->store().set(fmt::format("ps/{}/address", m.index), address);
  log.info("ps {} serving at {} ({} mode)", m.index, address, config::to_string(job.strategy.mode));
  // SIGTERM (preemption): the job checkpoints, which needs this server, and then stops; so
  // ask for that and go on serving until the coordinator says the job is over, or the grace
  // period has passed.
  std::optional<std::chrono::steady_clock::time_point> leave_by;
  while (!member->wait_for_shutdown(200ms)) {
    if (server.fenced() || (replica && replica->fenced())) {
      // Cut off while its backup took over: it acknowledges nothing more, and a relaunch
      // brings it back as a backup (docs/fault_tolerance/parameter_servers.md, "Hot backups").
      fmt::print(stderr, "trib: error: ps {} was replaced by the backup of its shard while it was cut off; exiting "
                 "(status {}) to come back as a backup\n", m.index, kReplacedExitStatus);
      std::fflush(nullptr);
      std::_Exit(kReplacedExitStatus);
    }
    if (args.terminate == nullptr || !args.terminate->received()) continue;
    if (!leave_by) {
      leave_by = std::chrono::steady_clock::now() + std::chrono::seconds(job.cluster.preemption_grace_s);
      log.info("ps {}: SIGTERM: asking the job to checkpoint and stop (grace {} s)", m.index,
               job.cluster.preemption_grace_s);
      member->store().set(kStopKey, fmt::format("ps {}: SIGTERM", m.index));
    }
    if (std::chrono::steady_clock::now() > *leave_by) {
      log.warn("ps {}: the job did not stop within cluster.preemption_grace_s ({} s); leaving", m.index,
               job.cluster.preemption_grace_s);
      break;
    }
  }
  monitor.reset();  // it reads the member and the server
  if (replica && replica->attach) replica->attach->stop();  // it reads the store
  member->leave();
  // Serving stops before the member goes: a connection closing now would reach a backup link,
  // whose epoch claim asks the member's store (the job's end used to crash a server there).
  listener.reset();
  gate->shut();  // waits for a request in flight; none reaches the server after
  replica.reset();
  member.reset();  // no roster may reach the server once it is gone
  return 0;
}

namespace {

// A worker's part of the job, once it joined.
int train_as_worker(std::unique_ptr<cluster::Member>& member, const RoleArgs& args, const Log& log) {
  const cluster::Membership& m = member->membership();
  config::JobConfig job = config::parse_job_config(m.job_yaml, "the coordinator's job");
  // A fixed equal shard per starting worker leaves none for a ps joiner; an allreduce group
  // reshards when it takes one in (at an epoch boundary).
  const bool allreduce_files = job.strategy.name == config::StrategyName::allreduce && !job.data.stream();
  TRIB_CHECK(m.index < m.workers || allreduce_files || (!job.data.stream() && job.data.assignment == "dynamic"),
             InvalidArgument,
             "worker {} joined beyond cluster.workers ({}): the job's data is split into that many fixed shards "
             "(data.assignment: shards), none for it; joiners need data.assignment: dynamic (a file job) or "
             "strategy.name: allreduce (a file job)",
             m.index, m.workers);

  train::TrainerOptions o;
  o.job = job;
  o.output = m.run_dir;
  o.resume = m.resume;
  o.progress_lines = args.progress_lines;
  // Started in place of a lost chief (the coordinator said so when it evicted the last one):
  // take the run back, not a new one.
  const std::string chief_losses =
      m.index == 0 ? member->store().try_get(cluster::membership_key::kChiefRelaunched).value_or("") : "";
  o.relaunched_chief = !chief_losses.empty();
  o.distribution.worker_index = m.index;
  o.distribution.workers = m.workers;
  // Stream jobs: workers hand their Kafka offsets to the chief through the coordinator's store.
  o.distribution.publish = [&member](const std::string& key, const std::string& value) { member->store().set(key, value); };
  o.distribution.lookup = [&member](const std::string& key) { return member->store().try_get(key); };
  o.distribution.fault_point = stream_fault_point(m.index, m.run_dir);  // tests only (app/fault_hooks.h)

  // Named by its index: a peer's error then says which worker it lost.
  auto data_plane = transport_for("worker", args, net_options(job), log, m.index);
  if (job.strategy.name == config::StrategyName::pipeline) {  // its own loop per stage (app/pipeline_role.h)
    const std::string bind = bind_host(args, job);
    run_pipeline_stage(job, {member.get(), data_plane, bind,
                             [bind, args](const std::string& bound) { return published_address(bind, args, bound); }, &log});
    member->leave();
    return 0;
  }
  strategy::WorkerLinks links{m.index, m.workers, {}, nullptr, m.incarnation, {}, {}};
  std::optional<AllreduceMembership> allreduce;  // outlives the training below
  if (job.strategy.name == config::StrategyName::ps) {
    if (m.index == 0) {
      std::vector<ps::VariableInfo> vars = strategy::trainable_variables(job);
      fmt::print("placement ({}):\n{}\n", config::to_string(job.strategy.placement),
                 strategy::make_placement(job, vars).table(vars));
    }
    links.ps_recovery = ps_recovery(*member, args, job, log);
    links.ps_recovery.chief_relaunched = o.relaunched_chief;
    // A stream's offsets: the servers' cursors hold the chief's share where the job assigns
    // it; otherwise only a checkpoint has them.
    links.ps_recovery.chief_rejoins = !job.data.stream() || train_stream::ps_chief_rejoins(job);
    links.ps_recovery.chief_takes_back = !job.data.stream();
    links.ps_cursors = data_cursors(job);
    links.ps_on_exchange = ps_push_fault_hook(m.index, m.run_dir);  // tests only (app/fault_hooks.h)
    for (int p = 0; p < m.ps; ++p) {
      ps_address(*member, p, std::chrono::seconds(job.cluster.join_timeout_s));
      // Dialled as a lost server is: the address is read again at each try (a server
      // relaunched meanwhile listens at a new one).
      // A relaunched chief with backups: the server may have been lost with it, before any worker
      // moved its shard (a job with no other worker training), so its backup is tried after 2 s.
      const std::chrono::milliseconds timeout = std::chrono::seconds(job.cluster.join_timeout_s);
      links.servers.push_back(o.relaunched_chief && job.strategy.ps_replicas > 0
                                  ? links.ps_recovery.reconnect_or_backup(p, timeout, std::chrono::seconds(2))
                                  : links.ps_recovery.reconnect(p, timeout));
    }
    // data.assignment: dynamic: server 0 hands out the data (chunked_batch_source.h).
    if (job.data.assignment == "dynamic" && !job.data.stream() && !links.servers.empty() &&
        job.strategy.ps_replicas > 0)
      o.distribution.claim_data = replicated_claims(links.servers[0], links.ps_recovery.backup, m.index, m.incarnation);
    else if (job.data.assignment == "dynamic" && !job.data.stream() && !links.servers.empty())
      o.distribution.claim_data = [server0 = links.servers[0], index = m.index,
                                   generation = m.incarnation](const std::string& request) {
        return ps::claim_data(*server0, index, generation, request);
      };
  } else if (job.strategy.name == config::StrategyName::allreduce) {
    // Every worker listens, publishes its address, and the group forms once all are known; a
    // lost worker's survivors re-form it (app/allreduce_membership.h).
    std::string bind = bind_host(args, job);
    allreduce.emplace(AllreduceMembershipOptions{
        .member = member.get(),
        .transport = data_plane,
        .listen = net::format_host_port(bind, 0),
        .published = [bind, args](const std::string& bound) { return published_address(bind, args, bound); },
        .join_timeout = std::chrono::seconds(job.cluster.join_timeout_s),
        .loss_wait = 2 * std::chrono::milliseconds(job.cluster.peer_timeout_ms) + std::chrono::seconds(2),
        .base = {.segment_bytes = static_cast<std::size_t>(job.strategy.segment_kib) << 10,
                  .pipeline_depth = static_cast<std::size_t>(job.strategy.pipeline_depth)},
        .log = &log,
        .await_chief_word = !job.data.stream()});
    // A relaunched worker joins the running group once its strategy starts (its model built).
    // In a stream job the group then rolls back to its newest checkpoint, the joiner with it
    // (StreamHooks::on_regroup); it asks only once the group has finished its last rollback.
    TRIB_CHECK(!(allreduce->joining() && job.data.stream() && !job.cluster.stream_rejoin), InvalidArgument,
               "worker {}: an allreduce stream job takes a worker back while it runs only with cluster.stream_rejoin: "
               "true (the survivors go on without it); stop the job and --resume it with all its workers",
               m.index);
    if (allreduce->joining() && job.data.stream())
      links.join = [a = &*allreduce, &dist = o.distribution, held = stream_join_fault_hook(m.index, m.run_dir)] {
        if (held) held();  // tests only (app/fault_hooks.h)
        // A group re-formed after the chief's last step (its survivors waiting to hand a
        // relaunched chief the final state) rolls back no more.
        a->await_settled([&dist](const GroupPlan& plan) {
          return train_stream::group_rolled_back(dist, plan.generation, plan.workers) ||
                 train_stream::chief_past_last_step(dist);
        });
        return a->join();
      };
    else if (allreduce->joining())
      links.join = [a = &*allreduce] { return a->join(); };
    else
      links.group = allreduce->form();
    // An allreduce stream job's chief gives way at a checkpoint barrier for a lost worker
    // (stream_sync.h), a relaunched one included: it offers nothing in the old group's scope.
    if (job.data.stream()) o.distribution.worker_lost = [a = &*allreduce](int index) { return a->lost_member(index); };
    links.regroup = allreduce->regroup();
    if (!job.data.stream()) links.admit_joiners = allreduce->admit_joiners();
    links.await_rejoin = allreduce->await_chief();
    if (job.data.stream()) links.await_relaunched_chief = allreduce->await_relaunched_chief();
    // Tests only (app/fault_hooks.h): which process of worker 0 this is counts.
    if (auto fault = allreduce_fault_hook(m.index, chief_losses.empty() ? 0 : std::stoi(chief_losses)))
      links.await_rejoin = [fault, inner = links.await_rejoin](const collectives::Group& g) {
        fault();
        return inner(g);
      };
  }
  // monitoring.port: this worker's metrics, fed by the training loop (train/observed_hooks.h).
  std::unique_ptr<RoleMonitor> monitor = start_role_monitor(job, "worker", m.index, m.ps, log);
  if (monitor) {
    if (job.strategy.name == config::StrategyName::allreduce)
      collect_net_stats(monitor->registry, "trib_allreduce", data_plane->context());
    add_generation(monitor->registry, *member);
    o.metrics = &monitor->registry;
  }
  o.distribution.make_update = [links](const train::UpdateInputs& in) {
    return strategy::make_update_strategy(in, links);
  };
  std::optional<ClusterStop> stop;
  if (args.terminate != nullptr) {
    ClusterStopOptions so;
    so.store = &member->store();
    so.signal = args.terminate;
    so.worker_index = m.index;
    so.lockstep = job.strategy.name == config::StrategyName::allreduce;
    so.reachable = [&member] { return member->connected(); };
    so.poll_store = &member->store_if_connected();
    // A parameter-server job goes on without a worker other than the chief: SIGTERM to one
    // is its own leave (scaling down), not the job's stop.
    so.leaves_alone = job.strategy.name == config::StrategyName::ps && m.index != 0;
    // An allreduce file job's worker other than the chief leaves when its launcher asks (trib
    // scale down), at an epoch boundary, where the others reshard its data among them.
    if (allreduce_files && m.index != 0) {
      so.leave_key = cluster::membership_key::leave_request(m.index);
      so.leave_value = std::to_string(m.incarnation);
      so.leaves_between_epochs = true;
    }
    stop.emplace(so);
    o.stop = &*stop;
  }
  try {
    train_job(o);
  } catch (const RunEndedBeforeJoin& e) {
    // Relaunched after the run's end was written (an allreduce worker lost after its last
    // exchange): the job is complete without it.
    log.info("{}", e.what());
    stop.reset();
    member->leave();
    return 0;
  }
  if (allreduce) allreduce->confirm_run_end();  // the chief's: the others wait for it to leave
  stop.reset();
  member->leave();
  return 0;
}

}  // namespace

int run_worker_role(const RoleArgs& given, const Log& log) {
  const RoleArgs args = with_secret(given);
  std::unique_ptr<cluster::Member> member = join("worker", args, log);
  try {
    return train_as_worker(member, args, log);
  } catch (const std::exception& e) {
    // Refused by the data plane because it was evicted while stopped (its requests are stale
    // now): the coordinator's verdict, which the member is about to hear, makes it rejoin.
    member->await_verdict(std::chrono::seconds(10));
    // A chief that fails with an error says so before it goes: the coordinator then ends the
    // job at once rather than wait for a restart that would fail the same way.
    if (member->membership().index == 0) {
      try {
        member->store().set(cluster::membership_key::kChiefFailed, e.what());
      } catch (const std::exception&) {
        // The coordinator is away: it waits for the chief, bounded by cluster.join_timeout_s.
      }
    }
    throw;
  }
}

int run_node_role(const NodeArgs& args, const Log& log) {
  cluster::LauncherRank r = cluster::launcher_rank();
  // The launch's size: the launcher's, or --size where the launcher gives none (a
  // Kubernetes indexed Job), or else unknown until the coordinator hands out the job.
  int size = r.size;
  std::string size_source = fmt::format("{}={}", r.size_variable, r.size);
  if (args.size > 0) {
    TRIB_CHECK(r.size < 0 || r.size == args.size, InvalidArgument, "--size {} disagrees with {}", args.size,
               size_source);
    size = args.size;
    size_source = fmt::format("--size {}", args.size);
  }
  TRIB_CHECK(size < 0 || r.rank < size, InvalidArgument, "{}={} is not a rank below {}", r.rank_variable, r.rank,
             size_source);
  TRIB_CHECK(size < 0 || (args.ps >= 0 && args.ps < size), InvalidArgument,
             "--ps {} leaves no workers among the {} processes of this launch ({})", args.ps, size, size_source);
  RoleArgs role = args.role;
  if (role.join.empty()) {
    std::optional<std::string> master = cluster::launcher_coordinator();
    TRIB_CHECK(master.has_value(), InvalidArgument,
               "--join is required: the coordinator's HOST:PORT (or set MASTER_ADDR and MASTER_PORT)");
    role.join = *master;
  }
  bool server = r.rank < args.ps;
  log.info("node: rank {}{} ({}) is a {}", r.rank, size < 0 ? "" : fmt::format(" of {}", size), r.launcher,
           server ? "parameter server" : "worker");
  role.expected_ps = args.ps;
  role.expected_workers = size < 0 ? -1 : size - args.ps;
  if (role.index < 0) role.index = server ? r.rank : r.rank - args.ps;  // rank order is role order
  return server ? run_ps_role(role, log) : run_worker_role(role, log);
}

}  // namespace trib::app
