#include "app/ps_replica_role.h"

#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "app/fault_hooks.h"
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
                                                const std::string& what, std::string* dialled = nullptr) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string last_error = "no address published";
  for (;;) {
    if (std::optional<std::string> address = member.store().try_get(key)) {
      try {
        std::shared_ptr<net::Connection> c = transport.connect(*address);
        if (dialled != nullptr) *dialled = *address;
        return c;
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

namespace {

// Set by the backup that takes a shard over from its lost primary: the shard moved at least once.
std::string taken_over_key(int shard) { return fmt::format("ps/{}/taken_over", shard); }

// How long a relaunched server keeps the shard's hot backup published (below) when nobody
// takes the shard over: then it publishes its own, as it did at once before.
constexpr std::chrono::seconds kHotBackupWait{40};

}  // namespace

bool claim_shard_epoch(cluster::Member& member, int shard, std::int64_t epoch) {
  return member.store().add(fmt::format("ps/{}/epoch/{}", shard, epoch), 1) == 1;
}

bool PsReplicaRole::fenced() const {
  if (link && link->fenced()) return true;
  for (const auto& o : onward)
    if (o->fenced()) return true;
  return false;
}

PsReplicaRole::~PsReplicaRole() {
  if (attach) attach->stop();  // before the servers and links it reaches
}

std::unique_ptr<PsReplicaRole> start_ps_replica(cluster::Member& member, ps::PsServer& server,
                                                const PsReplicaSetup& s) {
  auto role = std::make_unique<PsReplicaRole>();
  cluster::Member* m = &member;
  std::shared_ptr<net::Transport> out = s.transport(s.net);
  role->attach = std::make_unique<BackupAttach>(member, out, ps_backup_key);
  std::vector<int> shards{(s.index + s.servers - 1) % s.servers};
  if (s.relaunched) shards.push_back(s.index);
  for (const int shard : shards) {
    role->backups.push_back(std::make_unique<ps::PsBackup>(s.options_for(shard), s.relaunched));
    ps::PsBackup* backup = role->backups.back().get();
    backup->set_log(s.log);
    backup->set_claim([m, shard](std::int64_t epoch) { return claim_shard_epoch(*m, shard, epoch); });
    // Its own transport: frames are a request plus the frame's fixed part and an address, and
    // the shard it backs may be larger than this server's own. A late backup's first frame is
    // the whole state: values, the round's sum and the optimizer's slots (room for four).
    net::NetOptions serving = s.net;
    const std::uint64_t request = backup->server().max_request_bytes();
    serving.max_frame_bytes = std::min(serving.max_frame_bytes, 6 * request + ps::replica::kFixedBytes +
                                                                    ps::replica::kMaxAddressBytes + (16u << 20));
    net::Handlers h;
    h.on_request = [backup, fault = backup_fault_hook(s.index, s.relaunched, shard)](net::Message msg,
                                                                                 const net::PeerIdentity& from) {
      if (fault) fault(msg);  // tests only (app/fault_hooks.h)
      return backup->handle(std::move(msg), from);
    };
    h.on_close = [backup](const net::PeerIdentity& peer, std::string_view) { backup->connection_closed(peer); };
    role->listeners.push_back(s.transport(serving)->listen(net::format_host_port(s.bind, 0), std::move(h)));
    const std::string address = s.published(role->listeners.back()->address());
    // Once it takes the shard over, its changes go to a backup of its own, which a relaunched
    // server provides (attach); workers and relaunched ones find it at the shard's address.
    auto onward = std::make_shared<ps::BackupLink>(shard, ps::BackupLink::Dial(), s.log);
    onward->set_claim([m, shard](std::int64_t epoch) { return claim_shard_epoch(*m, shard, epoch); });
    backup->set_forward([onward](const net::Message& frame, std::int64_t& epoch) { return onward->forward(frame, epoch); });
    backup->set_taken_over([m, shard, address] {
      m->store().set(fmt::format("ps/{}/address", shard), address);
      m->store().set(taken_over_key(shard), address);
    });
    role->onward.push_back(onward);
    role->attach->add({shard, &backup->server(), onward, [backup] { return backup->acting(); }, address});
    member.subscribe([backup](const cluster::RosterView& roster) {
      for (const cluster::LostEntry& l : roster.lost)
        if (l.role == "worker") backup->worker_lost(l.index, l.generation);
      for (const cluster::RosterEntry& e : roster.members)
        if (e.role == "worker") backup->worker_joined(e.index, e.incarnation);
    });
    auto publish = [m, shard, address, log = s.log, index = s.index, relaunched = s.relaunched] {
      m->store().set(ps_backup_key(shard), address);
      if (log) log(fmt::format("ps {}: holds the {}backup of ps {} at {}", index, relaunched ? "new " : "", shard, address));
    };
    // A relaunched server's own shard that nobody took over yet (no worker reached it since its
    // primary was lost: a relaunched chief, alone, dials it only after this server started):
    // its address here would hide the hot backup, which holds the only copy, and the shard
    // would fall back to a restore from the newest checkpoint. It waits for the takeover.
    if (s.relaunched && shard == s.index && !member.store().try_get(taken_over_key(shard)))
      role->publish_own = std::jthread([m, shard, publish](std::stop_token stop) {
        const auto until = std::chrono::steady_clock::now() + kHotBackupWait;
        while (!stop.stop_requested() && !m->store().try_get(taken_over_key(shard)) &&
               std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(100ms);
        if (!stop.stop_requested()) publish();
      });
    else
      publish();
  }
  if (!s.relaunched) {
    // This server's own shard goes to its backup on server index + 1.
    const std::string key = ps_backup_key(s.index);
    const auto timeout = s.dial_timeout;
    const int index = s.index;
    role->link = std::make_shared<ps::BackupLink>(
        s.index,
        [m, out, key, timeout, index] {
          std::string address;
          auto c = dial_published(*m, *out, key, timeout, fmt::format("the backup of ps {}", index), &address);
          return ps::BackupLink::Dialled{std::move(c), std::move(address)};
        },
        s.log);
    role->link->set_claim([m, index](std::int64_t epoch) { return claim_shard_epoch(*m, index, epoch); });
    server.set_forward([link = role->link](const net::Message& frame, std::int64_t& epoch) {
      return link->forward(frame, epoch);
    });
    role->attach->add({s.index, &server, role->link, [] { return true; }, std::string()});
  }
  role->attach->start();
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
    std::map<int, std::string> dialled;  // per shard, the address of the last connection
  };
  auto cache = std::make_shared<Cache>();
  return [m, transport, cache](int ps, std::chrono::milliseconds timeout) {
    std::lock_guard lock(cache->mu);
    std::shared_ptr<net::Connection>& c = cache->open[ps];
    if (c && c->is_open()) return c;
    c = nullptr;
    // A worker that notices the loss late finds the shard taken over already, and its backup
    // key may name a server relaunched since, whose new backup holds no copy yet: the shard
    // is at its acting primary. Not when that is where this worker lost it (a second loss:
    // the backup then holds the copy).
    if (std::optional<std::string> acting = m->store().try_get(taken_over_key(ps));
        acting && *acting != cache->dialled[ps]) {
      try {
        c = transport->connect(*acting);
        cache->dialled[ps] = *acting;
      } catch (const Error&) {
        c = nullptr;  // lost in turn: its backup has the shard now
      }
    }
    if (!c)
      c = dial_published(*m, *transport, ps_backup_key(ps), timeout, fmt::format("the backup of ps {}", ps),
                         &cache->dialled[ps]);
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
  };
  auto state = std::make_shared<State>(State{std::move(server0)});
  return [state, backup, worker, generation](const std::string& request) {
    const std::uint32_t seq = ++state->seq;
    // As ShardFailover: the shard may move on more than once (src/ps/shard_failover.h).
    for (int moves = 0;; ++moves) {
      try {
        return ps::claim_data(*state->server, worker, generation, request, seq);
      } catch (const Unavailable&) {
        if (moves == 2) throw;
        state->server->close();
        state->server = backup(0, std::chrono::seconds(30));
      }
    }
  };
}

}  // namespace trib::app
