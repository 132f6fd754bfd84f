#include "app/ps_replica_role.h"

#include <map>
#include <mutex>
#include <thread>

#include "ps/replica_wire.h"
#include "trib/net/host_port.h"
#include "trib/ps/data_claim.h"

namespace trib::app {

using namespace std::chrono_literals;

std::string ps_backup_key(int shard) { return fmt::format("ps/{}/backup/address", shard); }

namespace {

// Dials the address published under `key`, read again at each try, until `timeout`.
std::shared_ptr<net::Connection> dial_published(cluster::Member& member, net::Transport& transport,
                                                const std::string& key, std::chrono::milliseconds timeout,
                                                const std::string& what) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string last_error = "no address published";
  for (;;) {
    if (std::optional<std::string> address = member.store().try_get(key)) {
      try {
        return transport.connect(*address);
      } catch (const Error& e) {
        last_error = fmt::format("{}: {}", *address, e.what());
      }
    }
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Unavailable, "{} not reachable within {} s ({})", what,
               std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), last_error);
    std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

std::unique_ptr<PsReplicaRole> start_ps_replica(cluster::Member& member, ps::PsServer& server,
                                                const PsReplicaSetup& s) {
  auto role = std::make_unique<PsReplicaRole>();
  const int shard = (s.index + s.servers - 1) % s.servers;
  role->backup = std::make_unique<ps::PsBackup>(s.options_for(shard));
  role->backup->set_log(s.log);
  ps::PsBackup* backup = role->backup.get();
  // Its own transport: frames are a request plus the frame's fixed part and an address, and
  // the shard it backs may be larger than this server's own.
  net::NetOptions serving = s.net;
  serving.max_frame_bytes = std::min(
      serving.max_frame_bytes,
      backup->server().max_request_bytes() + ps::replica::kFixedBytes + ps::replica::kMaxAddressBytes);
  net::Handlers h;
  h.on_request = [backup](net::Message m, const net::PeerIdentity& from) { return backup->handle(std::move(m), from); };
  h.on_close = [backup](const net::PeerIdentity& peer, std::string_view) { backup->connection_closed(peer); };
  role->listener = s.transport(serving)->listen(net::format_host_port(s.bind, 0), std::move(h));
  const std::string address = s.published(role->listener->address());
  member.store().set(ps_backup_key(shard), address);
  member.subscribe([backup](const cluster::RosterView& roster) {
    for (const cluster::LostEntry& l : roster.lost)
      if (l.role == "worker") backup->worker_lost(l.index, l.generation);
    for (const cluster::RosterEntry& e : roster.members)
      if (e.role == "worker") backup->worker_joined(e.index, e.incarnation);
  });
  if (s.log) s.log(fmt::format("ps {}: holds the backup of ps {} at {}", s.index, shard, address));

  // This server's own shard goes to its backup on server index + 1.
  std::shared_ptr<net::Transport> out = s.transport(s.net);
  const std::string key = ps_backup_key(s.index);
  const auto timeout = s.dial_timeout;
  const int index = s.index;
  cluster::Member* m = &member;
  role->link = std::make_shared<ps::BackupLink>(
      s.index,
      [m, out, key, timeout, index] {
        return dial_published(*m, *out, key, timeout, fmt::format("the backup of ps {}", index));
      },
      s.log);
  server.set_forward([link = role->link](const net::Message& frame) { link->forward(frame); });
  return role;
}

std::function<std::shared_ptr<net::Connection>(int ps, std::chrono::milliseconds timeout)> ps_backup_dial(
    cluster::Member& member, std::shared_ptr<net::Transport> transport) {
  cluster::Member* m = &member;
  // One connection per backup, whoever asks: the worker's pushes and its data claims must
  // reach the backup on one connection, as they reached the primary, or the backup would
  // take each switch between them for a relaunched worker (and hand its data to others).
  struct Cache {
    std::mutex mu;
    std::map<int, std::shared_ptr<net::Connection>> open;
  };
  auto cache = std::make_shared<Cache>();
  return [m, transport, cache](int ps, std::chrono::milliseconds timeout) {
    std::lock_guard lock(cache->mu);
    std::shared_ptr<net::Connection>& c = cache->open[ps];
    if (!c || !c->is_open())
      c = dial_published(*m, *transport, ps_backup_key(ps), timeout, fmt::format("the backup of ps {}", ps));
    return c;
  };
}

std::function<std::string(const std::string&)> replicated_claims(
    std::shared_ptr<net::Connection> server0,
    std::function<std::shared_ptr<net::Connection>(int ps, std::chrono::milliseconds timeout)> backup, int worker,
    std::int64_t generation) {
  struct State {
    std::shared_ptr<net::Connection> server;
    std::uint32_t seq = 0;
    bool failed_over = false;
  };
  auto state = std::make_shared<State>(State{std::move(server0)});
  return [state, backup, worker, generation](const std::string& request) {
    const std::uint32_t seq = ++state->seq;
    try {
      return ps::claim_data(*state->server, worker, generation, request, seq);
    } catch (const Unavailable&) {
      if (state->failed_over) throw;
      state->server = backup(0, std::chrono::seconds(30));
      state->failed_over = true;
    }
    return ps::claim_data(*state->server, worker, generation, request, seq);
  };
}

}  // namespace trib::app
