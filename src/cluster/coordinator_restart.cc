// The coordinator's restart path: its journal, taking over a running job from it, and the
// members that come back after losing it (coordinator.h).
#include <algorithm>

#include "cluster/coordinator_journal.h"
#include "cluster/latest_writer.h"
#include "trib/cluster/coordinator.h"
#include "trib/cluster/membership_keys.h"
#include "trib/cluster/memory_registry.h"
#include "trib/core/error.h"

namespace trib::cluster {

namespace {

// Moves a memory registry's generation past `generation`; a registry elsewhere (etcd) keeps
// its own, which outlives any coordinator anyway.
void carry_on_after(Registry& registry, std::int64_t generation) {
  if (auto* memory = dynamic_cast<MemoryRegistry*>(&registry)) memory->advance_to(generation);
}

}  // namespace

std::optional<JournalState> Coordinator::read_journal_locked() {
  if (std::optional<JournalState> j = read_journal(options_.journal)) {
    restart_.from = options_.journal;
    return j;
  }
  // None here (a coordinator started on another machine than the lost one, or its disk
  // lost): a durable registry keeps the journal too.
  if (!journal_keeper_) return std::nullopt;
  std::optional<std::string> text = registry_->kept(kJournalKey);
  if (!text) return std::nullopt;
  restart_.from = fmt::format("cluster.store ({})", kJournalKey);
  return parse_journal(*text, "in cluster.store");
}

void Coordinator::restore_locked() {
  // Only a coordinator that journals (trib coordinator) takes a job back: a local launcher
  // starts every process of its job itself.
  if (options_.journal.empty()) return;
  if (registry_->durable())
    journal_keeper_ = std::make_unique<LatestWriter>([this](const std::string& text) { keep_journal(text); });
  std::optional<JournalState> j = read_journal_locked();
  if (!j) return;
  restart_.generation = j->generation;
  // The restart is a change of its own: every member sees a newer generation than any before.
  carry_on_after(*registry_, j->generation + 1);
  if (j->ended) return;  // that job is over: this one starts a new membership
  TRIB_CHECK(j->job_yaml == options_.job_yaml, InvalidArgument,
             "coordinator: {} holds a running job with another configuration: restart the coordinator with the same "
             "config file and --set options, or give it another --output{}",
             restart_.from, registry_->durable() ? " (or another job name under cluster.store)" : "");
  restart_.running = true;
  for (const auto& [key, value] : j->store)
    if (!key.starts_with("cluster/")) store_.set(key, value);
  for (const RosterEntry& m : j->members) awaiting_[fmt::format("{}/{}", m.role, m.index)] = m;
  for (const LostEntry& l : j->lost) lost_[fmt::format("{}/{}", l.role, l.index)] = l;
  // A chief that was away when the coordinator went is waited for again, from now.
  if (auto chief = lost_.find("worker/0"); chief != lost_.end() && options_.chief_wait.count() > 0) {
    chief_away_ = ChiefAway{"(before the coordinator's restart)", chief->second.reason, std::chrono::steady_clock::now()};
    const std::string losses = store_.try_get(membership_key::kChiefRelaunched).value_or("");
    chief_losses_ = losses.empty() ? 1 : std::stoi(losses);
  }
  taken_ = j->taken;
  workers_left_ = j->workers_left;
  restart_.awaiting = static_cast<int>(awaiting_.size());
  started_ = std::chrono::steady_clock::now();
}

void Coordinator::journal_locked() {
  if (options_.journal.empty()) return;
  JournalState s;
  s.job_yaml = options_.job_yaml;
  s.ended = ended_;
  s.generation = registry_->roster().generation;
  for (const auto& [address, e] : members_) s.members.push_back({e.role, e.index, address, e.incarnation});
  for (const auto& [name, e] : awaiting_) s.members.push_back(e);
  for (const auto& [name, l] : lost_) s.lost.push_back(l);
  s.taken = taken_;
  s.workers_left = workers_left_;
  for (const auto& [key, value] : store_.scan(""))
    if (journaled_key(key)) s.store[key] = value;
  const std::string text = journal_text(s);
  // Off the lock's path: etcd's writes take milliseconds (the newest journal wins).
  if (journal_keeper_) journal_keeper_->post(text);
  try {
    write_journal(options_.journal, text);
    journal_failed_ = false;
  } catch (const Error& e) {
    // The job goes on; only a restart of this coordinator would miss it.
    if (!journal_failed_)
      fmt::print(stderr, "trib: warning: {}; a restarted coordinator could not take this job back\n", e.what());
    journal_failed_ = true;
  }
}

void Coordinator::keep_journal(const std::string& text) {
  // etcd refuses requests over 1.5 MiB by default, and the value travels in base64.
  constexpr std::size_t kMaxKeptBytes = std::size_t{1} << 20;
  std::string problem;
  if (text.size() > kMaxKeptBytes) {
    problem = fmt::format("the coordinator's journal is {} bytes, over the {} kept in cluster.store", text.size(),
                          kMaxKeptBytes);
  } else {
    try {
      registry_->keep(kJournalKey, text);
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  // Said once per failing stretch (this thread alone writes it): the job goes on meanwhile.
  if (!problem.empty() && !keep_failed_)
    fmt::print(stderr, "trib: warning: {}; a coordinator started elsewhere could not take this job back\n", problem);
  if (problem.empty() && keep_failed_) fmt::print(stderr, "trib: the coordinator's journal is in cluster.store again\n");
  keep_failed_ = !problem.empty();
}

net::Message Coordinator::rejoin(const std::string& role, int index, std::int64_t incarnation,
                                 std::int64_t generation, const net::PeerIdentity& from) {
  const std::string name = fmt::format("{}/{}", role, index);
  {
    std::lock_guard lock(mu_);
    auto awaited = awaiting_.find(name);
    const bool known = awaited != awaiting_.end();
    if (known) {
      TRIB_CHECK(awaited->second.incarnation == incarnation, InvalidArgument,
                 "coordinator: {} {} is held by incarnation {}, not {}", role, index, awaited->second.incarnation,
                 incarnation);
    } else {
      // Not awaited: either this coordinator knew it and let it go (evicted: its index is
      // lost or taken again), or it never knew it (restarted without a journal).
      TRIB_CHECK(!lost_.contains(name), InvalidArgument,
                 "coordinator: {} {} (incarnation {}) was evicted in generation {} ({})", role, index, incarnation,
                 lost_.at(name).generation, lost_.at(name).reason);
      TRIB_CHECK(!taken_[role].contains(index), InvalidArgument,
                 "coordinator: {} {} (incarnation {}) was evicted: its index belongs to another member", role, index,
                 incarnation);
      const int limit = role == "ps" ? options_.ps : role == "worker" ? options_.workers : 0;
      TRIB_CHECK(index < limit, InvalidArgument, "coordinator: role {} {} is not part of this job", role, index);
    }
    // Never behind what the member has heard already.
    carry_on_after(*registry_, generation);
    std::unique_ptr<Registration> registration;
    try {
      registration = registry_->enter(name, from.address, options_.member_ttl);
    } catch (const InvalidArgument&) {
      registry_->evict(name);  // the previous coordinator's entry (etcd), not expired yet
      registration = registry_->enter(name, from.address, options_.member_ttl);
    }
    if (known) {
      awaiting_.erase(awaited);
    } else {
      taken_[role].insert(index);
      if (role == "worker") ++workers_left_;
      store_.add("next/" + role, 1);
    }
    members_[from.address] = Entry{role, index, incarnation, std::move(registration)};
    store_.set(fmt::format("member/{}/{}", role, index), from.address);
    publish_locked();
  }
  return join_reply(index, incarnation);
}

void Coordinator::expire_awaiting_locked() {
  if (awaiting_.empty() || std::chrono::steady_clock::now() - started_ < options_.rejoin_grace) return;
  const std::int64_t generation = registry_->roster().generation + 1;
  for (const auto& [name, e] : awaiting_) {
    const std::string reason = fmt::format("did not reconnect within {} s of the coordinator's restart",
                                           options_.rejoin_grace.count() / 1000);
    const bool finished = store_.try_get(fmt::format("left/{}/{}", e.role, e.index)).value_or("") == "1";
    if (finished) continue;
    if ((e.role == "worker" && e.index != 0 && options_.workers_may_be_lost) ||
        (e.role == "ps" && server_may_be_lost_locked(e.index))) {
      lost_[name] = LostEntry{e.role, e.index, e.incarnation, generation, reason};
      taken_[e.role].erase(e.index);
      if (e.role == "worker") --workers_left_;
      store_.set(membership_key::lost(e.role, e.index), std::to_string(generation));
    } else if (!failed_) {
      failed_ = true;
      failure_ = loss_failure(e.role, e.index, e.address, reason);
    }
  }
  awaiting_.clear();
  carry_on_after(*registry_, generation);
  publish_locked();
  cv_.notify_all();
}

}  // namespace trib::cluster
