#include "trib/cluster/coordinator.h"


#include <algorithm>

#include <nlohmann/json.hpp>

#include "cluster/coordinator_journal.h"
#include "cluster/latest_writer.h"
#include "cluster/roster_publisher.h"
#include "cluster/store_protocol.h"
#include "trib/cluster/membership_keys.h"
#include "trib/cluster/memory_registry.h"
#include "trib/core/error.h"

namespace trib::cluster {

using json = nlohmann::json;

Coordinator::Coordinator(std::shared_ptr<net::Transport> transport, CoordinatorOptions options)
    : transport_(std::move(transport)), options_(std::move(options)), registry_(options_.registry) {
  if (!registry_) registry_ = std::make_shared<MemoryRegistry>();
  if (options_.max_workers < options_.workers) options_.max_workers = options_.workers;
  net::Handlers h;
  h.on_request = [gate = gate_](net::Message m, const net::PeerIdentity& from) {
    auto coordinator = gate->enter();
    TRIB_CHECK(static_cast<bool>(coordinator), Unavailable, "the coordinator is shutting down");
    return coordinator->handle(std::move(m), from);
  };
  h.on_close = [gate = gate_](const net::PeerIdentity& peer, std::string_view reason) {
    if (auto coordinator = gate->enter()) coordinator->on_close(peer, reason);
  };
  // Only small JSON requests come here: a bigger frame is refused before it is read.
  h.request_limit = [](std::uint32_t) { return proto::kMaxRequestBytes; };
  // Before the listener: a join it serves at once publishes a roster. Pushes start only after
  // a publish, which the listener's requests and the first publish below make.
  publisher_ = std::make_unique<RosterPublisher>(
      [this] { return listener_ ? listener_->connections() : std::vector<std::shared_ptr<net::Connection>>{}; },
      proto::kMembershipChanged);
  listener_ = transport_->listen(options_.listen, std::move(h));
  store_.set("cluster/ps", std::to_string(options_.ps));
  store_.set("cluster/workers", std::to_string(options_.workers));
  std::lock_guard lock(mu_);
  restore_locked();
  publish_locked();
}

Coordinator::~Coordinator() {
  shutting_down_ = true;
  gate_->shut();  // waits for a request in flight; none is served after
  // The last journal (the job's end) reaches cluster.store: a coordinator started for this job
  // name later must not take a finished job back.
  if (journal_keeper_) journal_keeper_->flush();
  publisher_->stop();  // it reads the listener's connections
  listener_.reset();
  std::lock_guard lock(mu_);
  members_.clear();  // registrations leave before the registry goes
}

net::Message Coordinator::handle(net::Message request, const net::PeerIdentity& from) {
  TRIB_CHECK(!request.tensor.defined(), InvalidArgument, "coordinator: {} sent a tensor; requests carry none",
             from.to_string());
  proto::Request r = proto::decode_request(request.method, request.body);
  net::Message reply;
  switch (r.method) {
    case proto::kStoreSet:
      store_.set(r.key, r.value);
      if (journaled_key(r.key)) {
        std::lock_guard lock(mu_);
        journal_locked();
      }
      return reply;
    case proto::kStoreGet: {
      auto v = store_.try_get(r.key);
      reply.body = v ? json{{"found", true}, {"value", *v}}.dump() : json{{"found", false}}.dump();
      return reply;
    }
    case proto::kStoreAdd:
      reply.body = json{{"value", store_.add(r.key, r.delta)}}.dump();
      if (journaled_key(r.key)) {
        std::lock_guard lock(mu_);
        journal_locked();
      }
      return reply;
    case proto::kJoin:
      return r.rejoin ? rejoin(r.role, r.index, r.incarnation, r.generation, from) : join(r.role, r.index, from);
    case proto::kLeave:
      leave(r.role, r.index, from.address);
      return reply;
    default:
      throw InvalidArgument(fmt::format("coordinator: unknown request 0x{:x} from {}", request.method,
                                        from.to_string()));  // decode_request refused it already
  }
}

net::Message Coordinator::join(const std::string& role, int requested, const net::PeerIdentity& from) {
  int limit = role == "ps" ? options_.ps : role == "worker" ? options_.max_workers : 0;
  TRIB_CHECK(limit > 0, InvalidArgument, "coordinator: role '{}' is not part of this job (ps: {}, workers: {})", role,
             options_.ps, options_.workers);
  // A member may ask for its index (the local launcher does, so that process "worker1" is
  // worker 1; `trib node` asks for its launcher rank's); otherwise it gets the lowest free one.
  int index = -1;
  std::int64_t incarnation = 0;
  {
    std::lock_guard lock(mu_);
    // A job that failed is stopping: a process started to replace the lost member (a
    // relaunched chief) is told why, rather than that its index is held.
    TRIB_CHECK(!failed_, InvalidArgument, "coordinator: the job has failed ({}); {} refused", failure_, from.to_string());
    std::set<int>& taken = taken_[role];
    if (requested >= 0) {
      TRIB_CHECK(requested < limit, InvalidArgument, "coordinator: {} asked to be {} {}, but the job has {} (0-{})",
                 from.to_string(), role, requested, limit, limit - 1);
      TRIB_CHECK(!taken.contains(requested), InvalidArgument, "coordinator: {} asked to be {} {}, which has already joined",
                 from.to_string(), role, requested);
      index = requested;
    } else {
      for (int i = 0; i < limit && index < 0; ++i)
        if (!taken.contains(i)) index = i;
      TRIB_CHECK(index >= 0, InvalidArgument, "coordinator: the job already has its {} {} role(s){}; {} was refused",
                 limit, role, role == "worker" ? " (cluster.max_workers)" : "", from.to_string());
    }
    const std::string name = fmt::format("{}/{}", role, index);
    std::unique_ptr<Registration> registration;
    try {
      registration = registry_->enter(name, from.address, options_.member_ttl);
    } catch (const InvalidArgument&) {
      // Held in a registry that outlives this coordinator (etcd) by an earlier holder whose
      // lease has not lapsed yet: this coordinator freed the index, so that entry is stale.
      registry_->evict(name);
      registration = registry_->enter(name, from.address, options_.member_ttl);
    }
    incarnation = registry_->roster().generation;
    taken.insert(index);
    if (role == "worker") ++workers_left_;
    members_[from.address] = Entry{role, index, incarnation, std::move(registration)};
    if (role == "worker" && index == 0) chief_back_locked(from.address);
    if (lost_.erase(name) > 0) store_.set(membership_key::lost(role, index), "");
    store_.add("next/" + role, 1);  // how many have joined
    store_.set(fmt::format("member/{}/{}", role, index), from.address);
    store_.set(fmt::format("left/{}/{}", role, index), "");  // a new holder has not left
    publish_locked();
  }
  return join_reply(index, incarnation);
}

net::Message Coordinator::join_reply(int index, std::int64_t incarnation) {
  json reply = {{"index", index},          {"job", options_.job_yaml}, {"run_dir", options_.run_dir}, {"resume", options_.resume},
                {"ps", options_.ps},       {"workers", options_.workers}, {"max_workers", options_.max_workers},
                {"incarnation", incarnation},
                {"roster", roster_to_json(roster())}};
  net::Message m;
  m.body = reply.dump();
  return m;
}

void Coordinator::on_close(const net::PeerIdentity& peer, std::string_view reason) {
  if (shutting_down_) return;
  std::string failure;
  {
    std::lock_guard lock(mu_);
    if (!members_.contains(peer.address)) return;  // connected but never joined (a status probe), or left
    failure = evict_locked(peer.address, std::string(reason));
  }
  if (!failure.empty()) fail(failure);
}

bool Coordinator::member_lost(const std::string& role, int index, const std::string& why) {
  std::string failure;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(members_.begin(), members_.end(),
                           [&](const auto& m) { return m.second.role == role && m.second.index == index; });
    if (it == members_.end()) {
      // Already evicted (its connection went first), or it left: judge by what was recorded.
      if (lost_.contains(fmt::format("{}/{}", role, index))) return true;
      if (store_.try_get(fmt::format("left/{}/{}", role, index)).value_or("") == "1") return true;
      failure = fmt::format("{} {} {}", role, index, why);
    } else {
      failure = evict_locked(it->first, why);
    }
  }
  if (failure.empty()) return true;
  fail(failure);
  return false;
}

std::string Coordinator::evict_locked(const std::string& address, const std::string& reason) {
  auto it = members_.find(address);
  Entry entry = std::move(it->second);
  members_.erase(it);
  // Eviction: the member leaves the registry, which starts a new generation.
  registry_->evict(fmt::format("{}/{}", entry.role, entry.index));
  entry.registration.reset();
  const std::int64_t generation = registry_->roster().generation;
  const bool chief = entry.role == "worker" && entry.index == 0;
  bool optional = (entry.role == "worker" && options_.workers_may_be_lost && (!chief || options_.chief_may_be_lost)) ||
                  (entry.role == "ps" && server_may_be_lost_locked(entry.index));
  std::string why_chief;  // why a chief that may be lost is not waited for
  if (optional && chief) {
    ++chief_losses_;
    if (options_.chief_wait.count() > 0) why_chief = await_chief_locked(address, reason);
    optional = why_chief.empty();
    // Before any process can take index 0 again: the next worker 0 takes the run back.
    if (optional) store_.set(membership_key::kChiefRelaunched, std::to_string(chief_losses_));
  }
  std::string failure;
  if (optional) {
    lost_[fmt::format("{}/{}", entry.role, entry.index)] =
        LostEntry{entry.role, entry.index, entry.incarnation, generation, reason};
    taken_[entry.role].erase(entry.index);  // free for a new member
    if (entry.role == "worker") --workers_left_;
    store_.set(membership_key::lost(entry.role, entry.index), std::to_string(generation));
    cv_.notify_all();
    if (options_.info)
      options_.info(fmt::format("coordinator: {} {} at {} was lost ({}); generation {}: {}", entry.role, entry.index,
                                address, reason, generation,
                                chief && chief_away_ ? chief_waited_for_locked()
                                : entry.role == "worker"
                                    ? fmt::format("the job goes on with {} worker(s)", workers_left_)
                                    : std::string("the job waits for it to come back")));
  } else {
    failure = loss_failure(entry.role, entry.index, address, reason, why_chief);
  }
  publish_locked();
  return failure;
}

bool Coordinator::server_may_be_lost_locked(int index) {
  return options_.servers_may_be_lost && !store_.try_get(fmt::format("ps/{}/address", index)).value_or("").empty();
}

std::string Coordinator::loss_failure(const std::string& role, int index, const std::string& address,
                                      const std::string& reason, const std::string& why_chief) const {
  if (role != "worker" || index != 0)
    return fmt::format("{} {} at {} was lost: {}", role, index, address, reason);
  // The chief holds the run directory, writes the checkpoints and the report: where no new
  // process takes its place (or none came back), the run resumes from its newest checkpoint.
  return fmt::format("worker 0 at {} was lost: {}; it is the chief, {}, so the job ends: resume it from its newest "
                     "checkpoint with --resume {}",
                     address, reason,
                     why_chief.empty() ? "which is not relaunched in place" + options_.chief_not_relaunched : why_chief,
                     options_.run_dir.empty() ? std::string("RUN_DIR") : options_.run_dir);
}

void Coordinator::leave(const std::string& role, int index, const std::string& from) {
  const std::string key = fmt::format("left/{}/{}", role, index);
  std::lock_guard lock(mu_);
  // A member whose connection broke before the reply sends its leave again: it counts once.
  const bool first = store_.try_get(key).value_or("") != "1";
  store_.set(key, "1");
  auto it = members_.find(from);
  const bool holder = it != members_.end() && it->second.role == role && it->second.index == index;
  if (holder) {
    members_.erase(it);  // its registration leaves: a new generation
    publish_locked();
  }
  if (role == "worker" && first) {
    --workers_left_;
    // A worker that left a job that goes on without it (SIGTERM, `trib scale`) frees its
    // index for a joiner; the chief's never is (it ends the run). Only the index's current
    // holder frees it: an evicted process's late leave must not free its successor's.
    if (holder && options_.workers_may_be_lost && index != 0) taken_[role].erase(index);
    cv_.notify_all();
  }
  journal_locked();
}

RosterView Coordinator::roster() {
  std::string text = store_.try_get(membership_key::kRoster).value_or("");
  return roster_from_json(text);
}

void Coordinator::publish_locked() {
  RosterView view;
  view.generation = registry_->roster().generation;
  for (const auto& [address, e] : members_) view.members.push_back({e.role, e.index, address, e.incarnation});
  // After a restart, those of the journal not back yet are still members (the data plane
  // goes on with them) until they come back or rejoin_grace passes.
  for (const auto& [name, e] : awaiting_) view.members.push_back(e);
  for (const auto& [name, l] : lost_) view.lost.push_back(l);
  const std::string text = roster_to_json(view);
  store_.set(membership_key::kRoster, text);
  store_.set(membership_key::kGeneration, std::to_string(view.generation));
  journal_locked();
  // Queued under mu_, so members see generations in order; pushed by the publisher's thread.
  publisher_->publish(text);
}

void Coordinator::fail(const std::string& why) {
  std::lock_guard lock(mu_);
  if (!failed_) failure_ = why;
  failed_ = true;
  cv_.notify_all();
}

Outcome Coordinator::wait(Millis timeout) {
  std::unique_lock lock(mu_);
  auto all_joined = [&] {
    auto n = store_.try_get("next/worker");
    return n && std::stoi(*n) >= options_.workers;
  };
  // A lost chief waited for (chief_wait) still has the run's end to write.
  auto done = [&] { return failed_ || (all_joined() && workers_left_ == 0 && !chief_away_); };
  const auto until = std::chrono::steady_clock::now() + timeout;
  // In slices: members awaited after a restart expire with time, not with an event.
  while (!done() && std::chrono::steady_clock::now() < until) {
    cv_.wait_until(lock, std::min(until, std::chrono::steady_clock::now() + Millis(200)));
    expire_awaiting_locked();
    expire_chief_locked();
  }
  TRIB_CHECK(done(), Timeout, "coordinator: the job did not finish within {} s", timeout.count() / 1000);
  ended_ = true;  // a coordinator started on this run directory now begins a new membership
  journal_locked();
  return failed_ ? Outcome{false, failure_} : Outcome{true, ""};
}

void Coordinator::shutdown_members() {
  shutting_down_ = true;
  publisher_->flush();  // the last roster first: members leave knowing the final membership
  for (const auto& c : listener_->connections()) {
    try {
      c->notify(net::Message{proto::kShutdown, "", Tensor()});
    } catch (const std::exception&) {
      // Already gone: nothing to tell.
    }
  }
}

}  // namespace trib::cluster
