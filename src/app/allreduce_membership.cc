#include "app/allreduce_membership.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace trib::app {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Set by the leader once its training is over: no group will take a joiner any more.
constexpr char kFinishedKey[] = "allreduce/finished";
// Set by the chief once the run's last checkpoint and report are written: the others may leave.
constexpr char kRunEndKey[] = "allreduce/run_end";

// Where worker `index` of the group of generation `generation` listens. Generation 0 is the
// first group, whose key the launch tools and tests already know.
std::string address_key(std::int64_t generation, int index) {
  return generation == 0 ? fmt::format("allreduce/{}/address", index)
                         : fmt::format("allreduce/gen/{}/{}", generation, index);
}

// Set by a joiner to its incarnation once it is ready to take part.
std::string join_key(int index) { return fmt::format("allreduce/join/{}", index); }

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

AllreduceMembership::AllreduceMembership(AllreduceMembershipOptions options) : o_(std::move(options)) {
  TRIB_CHECK(o_.member != nullptr && o_.transport != nullptr && o_.published && o_.log != nullptr, InvalidArgument,
             "AllreduceMembership needs a member, a transport, an address function and a log");
  // The chief writes the first plan once the first group exists: a worker that finds one came
  // after the start (a relaunched process, the chief's included).
  joining_ = read_plan().has_value();
}

AllreduceMembership::~AllreduceMembership() {
  if (leads_current()) {
    try {
      o_.member->store().set(kFinishedKey, "1");  // a joiner still waiting gives up
    } catch (const Error&) {
      // The coordinator is gone: so is every joiner's wait.
    }
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::shared_ptr<collectives::Group> AllreduceMembership::form() {
  GroupPlan plan{0, {}};
  for (int w = 0; w < o_.member->membership().workers; ++w) plan.workers.push_back(w);
  std::shared_ptr<collectives::Group> g = try_form(plan, [] { return false; });
  if (self() == 0) write_plan(plan);
  // Every member watches: whoever leads the current group (the chief, or while it is away the
  // lowest survivor) takes joiners in.
  watcher_ = std::thread([this] { watch_joiners(); });
  return g;
}

std::shared_ptr<collectives::Group> AllreduceMembership::join() {
  cluster::Member& member = *o_.member;
  // The plan before the request: a leader waiting for joiners may answer it at once, so a plan
  // read after it could already be the one that takes this worker in.
  const std::optional<GroupPlan> before = read_plan();
  const std::int64_t seen = before ? before->generation : -1;
  member.store().set(join_key(self()), std::to_string(member.membership().incarnation));
  o_.log->info("worker {}: asking to join the running allreduce group (incarnation {})", self(),
               member.membership().incarnation);
  // A worker beyond the starting ones is taken in at the group's next epoch boundary, which may
  // be far: it waits until then, or until the run ends (check_not_finished).
  const bool between_epochs = joins_between_epochs(self());
  if (between_epochs)
    o_.log->info("worker {}: the group takes it in at its next epoch boundary (worker {} is beyond the job's {} "
                 "starting workers: no shard of the epoch under way is its own)",
                 self(), self(), member.membership().workers);
  const auto until = Clock::now() + o_.join_timeout;
  for (;;) {
    std::optional<GroupPlan> plan = read_plan();
    if (plan && plan->generation > seen && contains(plan->workers, self())) {
      const std::int64_t g = plan->generation;
      if (auto group = try_form(*plan, [&] { auto p = read_plan(); return p && p->generation > g; })) {
        if (!watcher_.joinable()) watcher_ = std::thread([this] { watch_joiners(); });  // it may lead later
        return group;
      }
      continue;
    }
    check_not_finished();
    TRIB_CHECK(between_epochs || Clock::now() < until, Timeout,
               "worker {}: the group's leader gave it no place in the allreduce group within {} s (cluster.join_timeout_s)", self(),
               std::chrono::duration_cast<std::chrono::seconds>(o_.join_timeout).count());
    std::this_thread::sleep_for(20ms);
  }
}

collectives::Regroup AllreduceMembership::regroup() {
  return [this](const collectives::Group& failed, const std::string& why) {
    return regroup_now(failed, why, o_.loss_wait);
  };
}

std::function<std::shared_ptr<collectives::Group>(const collectives::Group&)> AllreduceMembership::await_chief() {
  return [this](const collectives::Group& current) { return await_run_end(current); };
}

std::function<std::shared_ptr<collectives::Group>(const collectives::Group&)> AllreduceMembership::await_relaunched_chief() {
  return [this](const collectives::Group& current) { return await_run_end(current, /*chief_lost=*/true); };
}

void AllreduceMembership::confirm_run_end() {
  if (self() != 0) return;
  o_.log->info("worker 0: the run's end is written (last checkpoint and report); the other workers may leave");
  try {
    o_.member->store().set(kRunEndKey, std::to_string(o_.member->membership().incarnation));
  } catch (const Error& e) {
    // The run is complete all the same; the others leave after cluster.join_timeout_s.
    o_.log->warn("worker 0: could not tell the other workers that the run's end is written: {}", e.what());
  }
}

std::shared_ptr<collectives::Group> AllreduceMembership::await_run_end(const collectives::Group& current,
                                                                       bool chief_lost) {
  // The chief confirms the end itself (confirm_run_end), once its last checkpoint and report
  // are written; only the others wait for it.
  if (self() == 0) return nullptr;
  std::shared_ptr<collectives::Group> held;  // a group re-formed here without the chief
  const collectives::Group* group = &current;
  bool said_waiting = false;
  for (;;) {
    std::vector<int> members;
    std::map<int, std::int64_t> incarnation;
    {
      std::lock_guard lock(mu_);
      members = members_;
      incarnation = incarnation_;
    }
    if (members.empty()) return nullptr;
    std::shared_ptr<collectives::Group> next;
    if (!contains(members, 0)) {
      // The chief is away (lost, relaunched): the same decision on every member, since they
      // all hold the same group without worker 0. Wait for its relaunched process to join.
      if (!said_waiting)
        o_.log->info("worker {}: the run's last step is done without worker 0 (the chief, relaunched): waiting up to {} s "
                     "for it to join, take the final state and write the last checkpoint and report",
                     self(), std::chrono::duration_cast<std::chrono::seconds>(o_.join_timeout).count());
      said_waiting = true;
      next = regroup_now(*group, "the run's last step is done; waiting for the relaunched chief", o_.join_timeout);
    } else if (o_.await_chief_word ? chief_lost_before_end(incarnation.count(0) ? incarnation.at(0) : -1)
                                   : chief_lost && lost_member(0)) {
      o_.log->info("worker {}: worker 0 (the chief) was lost after the run's last step, before confirming the run's end "
                   "(its last checkpoint and report): re-forming without it, to hand its relaunched process the final state",
                   self());
      next = regroup_now(*group, "the chief was lost after the run's last step", o_.loss_wait);
    } else {
      return nullptr;  // confirmed, or no longer waited for (chief_lost_before_end says which)
    }
    // A group that took a joiner in (the relaunched chief, or any relaunched worker) takes the
    // final state from the strategy; one of survivors only needs nothing, and waits on.
    bool took_joiner = false;
    {
      std::lock_guard lock(mu_);
      took_joiner = std::any_of(members_.begin(), members_.end(), [&](int w) {
        auto was = incarnation.find(w);
        auto now = incarnation_.find(w);
        return !contains(members, w) || was == incarnation.end() || now == incarnation_.end() || was->second != now->second;
      });
    }
    if (took_joiner) return next;
    held = std::move(next);
    group = held.get();
  }
}

bool AllreduceMembership::chief_lost_before_end(std::int64_t chief_incarnation) {
  cluster::Member& member = *o_.member;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(o_.join_timeout).count();
  const auto until = Clock::now() + o_.join_timeout;
  for (;;) {
    std::int64_t seen = -1;
    try {
      if (member.store().try_get(kRunEndKey)) {
        o_.log->info("worker {}: worker 0 confirmed the run's end; leaving", self());
        return false;
      }
      const cluster::RosterView roster = member.roster();
      seen = roster.generation;
      const std::map<int, std::int64_t> listed = listed_workers();
      auto chief = listed.find(0);
      if (chief == listed.end() || chief->second != chief_incarnation) {
        // The chief confirms before it leaves: a confirmation that came meanwhile is no loss.
        if (member.store().try_get(kRunEndKey)) continue;
        return true;
      }
    } catch (const Error& e) {
      // The coordinator did not answer this time (it may be restarting): look again.
      o_.log->debug("worker {}: waiting for worker 0's word on the run's end: {}", self(), e.what());
    }
    if (member.shutdown_requested()) {
      o_.log->info("worker {}: the job is stopping; leaving without worker 0's word on the run's end", self());
      return false;
    }
    if (Clock::now() >= until) {
      o_.log->warn("worker {}: worker 0 (the chief) did not confirm the run's end within {} s (cluster.join_timeout_s); "
                   "leaving: if it is lost from now on, the job ends without its last checkpoint and report, and "
                   "--resume continues from its newest checkpoint",
                   self(), seconds);
      return false;
    }
    if (seen >= 0) member.wait_for_change(seen, 50ms);
    else std::this_thread::sleep_for(50ms);
  }
}

bool AllreduceMembership::lost_member(int index) const {
  const std::map<int, std::int64_t> listed = listed_workers();
  std::lock_guard lock(mu_);
  auto now = listed.find(index);
  auto was = incarnation_.find(index);
  return now == listed.end() || was == incarnation_.end() || now->second != was->second;
}

void AllreduceMembership::await_settled(const std::function<bool(const GroupPlan&)>& rolled_back) {
  const auto until = Clock::now() + o_.join_timeout;
  for (;;) {
    const std::optional<GroupPlan> plan = read_plan();
    // Generation 0 is the first group, formed without a rollback.
    if (!plan || plan->generation == 0 || rolled_back(*plan)) return;
    check_not_finished();
    TRIB_CHECK(Clock::now() < until, Timeout,
               "worker {}: the allreduce group of generation {} did not finish rolling back within {} s "
               "(cluster.join_timeout_s)",
               self(), plan->generation, std::chrono::duration_cast<std::chrono::seconds>(o_.join_timeout).count());
    std::this_thread::sleep_for(20ms);
  }
}

void AllreduceMembership::check_not_finished() const {
  cluster::Member& member = *o_.member;
  // The chief's word that the run's end is written (confirm_run_end): the job is complete.
  if (member.store().try_get(kRunEndKey))
    throw RunEndedBeforeJoin(fmt::format("worker {}: the run ended (its chief wrote the last checkpoint and report) before "
                                         "this relaunched process could join the allreduce group: nothing is left for it "
                                         "to do",
                                         self()));
  // The leader sets kFinishedKey however its training ended.
  TRIB_CHECK(!member.shutdown_requested() && !member.store().try_get(kFinishedKey), Unavailable,
             "the job finished before worker {} could join its allreduce group", self());
}

std::optional<GroupPlan> AllreduceMembership::read_plan() const {
  std::optional<std::string> text = o_.member->store().try_get(update::kGroupPlanKey);
  if (!text || text->empty()) return std::nullopt;
  std::optional<GroupPlan> plan = update::parse_group_plan(*text);
  TRIB_CHECK(plan.has_value(), InvalidArgument, "the store's {} is not a group plan: {}", update::kGroupPlanKey, *text);
  return plan;
}

void AllreduceMembership::write_plan(const GroupPlan& plan) {
  o_.member->store().set(update::kGroupPlanKey, update::encode_group_plan(plan));
}

std::map<int, std::int64_t> AllreduceMembership::listed_workers() const {
  std::map<int, std::int64_t> listed;
  for (const cluster::RosterEntry& e : o_.member->roster().members)
    if (e.role == "worker") listed[e.index] = e.incarnation;
  return listed;
}

std::vector<int> AllreduceMembership::survivors(const std::map<int, std::int64_t>& listed) const {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  for (int w : members_) {
    auto it = listed.find(w);
    auto was = incarnation_.find(w);
    if (it != listed.end() && was != incarnation_.end() && it->second == was->second) out.push_back(w);
  }
  std::sort(out.begin(), out.end());  // the leader first
  return out;
}

bool AllreduceMembership::leads_current() const {
  std::lock_guard lock(mu_);
  return !members_.empty() && *std::min_element(members_.begin(), members_.end()) == self();
}

std::vector<int> AllreduceMembership::ready_joiners() {
  std::vector<int> out;
  std::vector<int> members;
  std::map<int, std::int64_t> incarnation;
  {
    std::lock_guard lock(mu_);
    members = members_;
    incarnation = incarnation_;
  }
  for (const auto& [w, inc] : listed_workers()) {
    auto was = incarnation.find(w);
    if (contains(members, w) && was != incarnation.end() && was->second == inc) continue;  // a member
    if (o_.member->store().try_get(join_key(w)).value_or("") == std::to_string(inc)) out.push_back(w);
  }
  return out;
}

std::shared_ptr<collectives::Group> AllreduceMembership::try_form(const GroupPlan& plan,
                                                                  const std::function<bool()>& superseded) {
  cluster::Member& member = *o_.member;
  const auto rank_it = std::find(plan.workers.begin(), plan.workers.end(), self());
  TRIB_CHECK(rank_it != plan.workers.end(), Unavailable, "worker {} is not among the workers {} of generation {}",
             self(), fmt::join(plan.workers, ", "), plan.generation);
  collectives::Endpoint endpoint = collectives::Endpoint::listen(o_.transport, o_.listen);
  member.store().set(address_key(plan.generation, self()), o_.published(endpoint.address()));
  collectives::GroupOptions g = o_.base;
  g.rank = static_cast<int>(rank_it - plan.workers.begin());
  g.size = static_cast<int>(plan.workers.size());
  g.generation = static_cast<std::uint64_t>(plan.generation);
  g.addresses.clear();
  const auto until = Clock::now() + o_.join_timeout;
  for (int w : plan.workers) {
    for (;;) {
      if (std::optional<std::string> a = member.store().try_get(address_key(plan.generation, w))) {
        g.addresses.push_back(*a);
        break;
      }
      if (superseded()) return nullptr;  // someone else was lost (or came) meanwhile
      TRIB_CHECK(!member.shutdown_requested(), Unavailable,
                 "the coordinator at {} stopped the job while the allreduce group formed", member.coordinator_address());
      TRIB_CHECK(Clock::now() < until, Timeout,
                 "worker {} did not publish its allreduce address for generation {} within {} s (cluster.join_timeout_s)",
                 w, plan.generation, std::chrono::duration_cast<std::chrono::seconds>(o_.join_timeout).count());
      std::this_thread::sleep_for(plan.generation == 0 ? 100ms : 2ms);
    }
  }
  std::shared_ptr<collectives::Group> group;
  try {
    group = collectives::Group::form(std::move(endpoint), g);
  } catch (const Error&) {
    if (superseded()) return nullptr;
    throw;
  }
  std::map<int, std::int64_t> listed = listed_workers();
  {
    std::lock_guard lock(mu_);
    members_ = plan.workers;
    incarnation_.clear();
    for (int w : plan.workers)
      if (auto it = listed.find(w); it != listed.end()) incarnation_[w] = it->second;
    current_ = group;
  }
  if (plan.generation > 0)
    o_.log->info("worker {}: allreduce group generation {} formed with workers {}: rank {} of {}", self(),
                 plan.generation, fmt::join(plan.workers, ", "), group->rank(), group->size());
  return group;
}

std::shared_ptr<collectives::Group> AllreduceMembership::regroup_now(const collectives::Group& failed,
                                                                     const std::string& why,
                                                                     std::chrono::milliseconds lead_wait) {
  cluster::Member& member = *o_.member;
  const auto until = Clock::now() + lead_wait + o_.join_timeout;
  for (;;) {
    std::map<int, std::int64_t> listed = listed_workers();
    {
      std::lock_guard lock(mu_);
      auto it = listed.find(self());
      TRIB_CHECK(it != listed.end() && it->second == incarnation_[self()], Unavailable,
                 "worker {} was evicted from the job after \"{}\": it cannot rejoin its old group", self(), why);
    }
    // The lowest survivor decides. Until the roster shows a lower member lost, that member
    // does (the roster may lag the failure this worker saw): wait for its plan, and look again.
    const std::vector<int> alive = survivors(listed);
    if (!alive.empty() && alive.front() == self()) return lead_regroup(failed, why, lead_wait);
    if (std::optional<GroupPlan> plan = read_plan(); plan && plan->generation > static_cast<std::int64_t>(failed.generation())) {
      TRIB_CHECK(contains(plan->workers, self()), Unavailable,
                 "worker {} was left out of the allreduce group of generation {} (workers {}) after \"{}\"", self(),
                 plan->generation, fmt::join(plan->workers, ", "), why);
      const std::int64_t g = plan->generation;
      // Out of date once a newer plan exists, or once a member of the failed group in this
      // plan is lost: a leader lost before the group formed makes no newer plan, the next does.
      auto superseded = [&] {
        if (auto p = read_plan(); p && p->generation > g) return true;
        std::map<int, std::int64_t> now = listed_workers();
        std::vector<std::pair<int, std::int64_t>> replaced;  // members of the failed group listed anew
        {
          std::lock_guard lock(mu_);
          for (int w : plan->workers) {
            auto was = incarnation_.find(w);
            if (!contains(members_, w) || was == incarnation_.end()) continue;  // a joiner
            auto it = now.find(w);
            if (it == now.end()) return true;  // lost since
            if (it->second != was->second) replaced.emplace_back(w, it->second);
          }
        }
        // A member of the failed group relaunched (a new incarnation): the leader may have
        // taken it in with this very plan (lost and joining at once, the relaunch being quick),
        // so only a new process that has not asked to join makes the plan stale. (Seen under
        // load: a member dropped the plan its leader had formed, and the leader's group failed.)
        return std::any_of(replaced.begin(), replaced.end(), [&](const std::pair<int, std::int64_t>& r) {
          return o_.member->store().try_get(join_key(r.first)).value_or("") != std::to_string(r.second);
        });
      };
      if (auto group = try_form(*plan, superseded)) return group;
      continue;
    }
    TRIB_CHECK(Clock::now() < until, Unavailable,
               "{}; the group's leader (worker {}) made no new allreduce group within {} ms, so this worker cannot go on",
               why, alive.empty() ? -1 : alive.front(), (lead_wait + o_.join_timeout).count());
    TRIB_CHECK(!member.shutdown_requested(), Unavailable, "{}; and the coordinator stopped the job", why);
    std::this_thread::sleep_for(5ms);
  }
}

std::shared_ptr<collectives::Group> AllreduceMembership::lead_regroup(const collectives::Group& failed,
                                                                      const std::string& why,
                                                                      std::chrono::milliseconds wait) {
  cluster::Member& member = *o_.member;
  const auto until = Clock::now() + wait;
  for (;;) {
    // Survivors: the members of the failed group that the coordinator still lists as the
    // same processes (a relaunched holder of an index is a newcomer, not a survivor).
    const cluster::RosterView roster = member.roster();
    std::map<int, std::int64_t> listed;
    for (const cluster::RosterEntry& e : roster.members)
      if (e.role == "worker") listed[e.index] = e.incarnation;
    std::vector<int> members, survivors, lost;
    {
      std::lock_guard lock(mu_);
      members = members_;
      for (int w : members_) {
        auto it = listed.find(w);
        (it != listed.end() && it->second == incarnation_[w] ? survivors : lost).push_back(w);
      }
    }
    std::vector<int> joiners = ready_joiners();
    // Those beyond the starting workers only where this group was stopped for them, at an
    // epoch boundary (admit_at_epoch_start).
    bool admitting = false;
    {
      std::lock_guard lock(mu_);
      admitting = admitting_ == failed.generation();
    }
    if (!admitting)
      std::erase_if(joiners, [&](int w) { return joins_between_epochs(w); });
    // Losses first: the survivors re-form alone, and joiners come in with the next regroup
    // (the watcher's abort). One plan holding both a lost member's index and its quick relaunch
    // had the survivors tell the old member from the new one by the roster they each saw, and a
    // survivor with a newer roster than the plan dropped it (the leader's group then failed).
    if (!lost.empty()) joiners.clear();
    if (!lost.empty() || !joiners.empty()) {
      // Above any plan already written: a leader lost while its group formed left one behind.
      const std::optional<GroupPlan> last = read_plan();
      GroupPlan plan{std::max({roster.generation, static_cast<std::int64_t>(failed.generation()) + 1,
                               last ? last->generation + 1 : 0}),
                     survivors};
      plan.workers.insert(plan.workers.end(), joiners.begin(), joiners.end());
      std::sort(plan.workers.begin(), plan.workers.end());
      o_.log->info("worker {}: {}{}; allreduce group generation {}: workers {}", self(),
                   lost.empty() ? "" : fmt::format("worker(s) {} lost", fmt::join(lost, ", ")),
                   joiners.empty() ? "" : fmt::format("{}worker(s) {} joining", lost.empty() ? "" : ", ", fmt::join(joiners, ", ")),
                   plan.generation, fmt::join(plan.workers, ", "));
      write_plan(plan);
      // Superseded when a worker of the plan is lost before the group forms.
      auto superseded = [&] {
        std::map<int, std::int64_t> now = listed_workers();
        return std::any_of(plan.workers.begin(), plan.workers.end(), [&](int w) {
          auto it = now.find(w);
          return it == now.end() || it->second != listed[w];
        });
      };
      if (auto group = try_form(plan, superseded)) return group;
      continue;
    }
    TRIB_CHECK(Clock::now() < until, Unavailable,
               "{}; the coordinator reported no lost worker within {} ms, so the group cannot re-form", why,
               wait.count());
    member.wait_for_change(roster.generation, 20ms);
  }
}

bool AllreduceMembership::joins_between_epochs(int index) const { return index >= o_.member->membership().workers; }

void AllreduceMembership::admit_at_epoch_start(collectives::Group& current) {
  if (!leads_current()) return;
  std::vector<int> waiting;
  try {
    for (int w : ready_joiners())
      if (joins_between_epochs(w)) waiting.push_back(w);
  } catch (const Error& e) {
    o_.log->debug("worker {}: looking for joiners at an epoch boundary: {}", self(), e.what());
    return;
  }
  if (waiting.empty()) return;
  {
    std::lock_guard lock(mu_);
    admitting_ = current.generation();
  }
  o_.log->info("worker {}: worker(s) {} join at this epoch boundary: re-forming the allreduce group", self(),
               fmt::join(waiting, ", "));
  current.abort(fmt::format("worker(s) {} join the group at an epoch boundary", fmt::join(waiting, ", ")));
}

std::function<void(collectives::Group&)> AllreduceMembership::admit_joiners() {
  return [this](collectives::Group& current) { admit_at_epoch_start(current); };
}

void AllreduceMembership::watch_joiners() {
  std::unique_lock lock(mu_);
  std::uint64_t aborted_generation = ~std::uint64_t{0};
  while (!wake_.wait_for(lock, 100ms, [&] { return stopping_; })) {
    // Only the current group's leader takes joiners in; the others only look again later.
    if (members_.empty() || *std::min_element(members_.begin(), members_.end()) != self()) continue;
    const std::shared_ptr<collectives::Group> looked_at = current_.lock();
    lock.unlock();
    std::vector<int> joiners;
    try {
      joiners = ready_joiners();
      std::erase_if(joiners, [&](int w) { return joins_between_epochs(w); });  // admit_at_epoch_start's
    } catch (const Error& e) {
      // The coordinator is going away (the job is ending), or it did not answer this time.
      o_.log->debug("worker {}: looking for joiners: {}", self(), e.what());
    }
    lock.lock();
    std::shared_ptr<collectives::Group> group = current_.lock();
    // A group formed meanwhile may have taken them in already: an abort would fail it for
    // nothing (and an allreduce stream job's members inside their rollback with it).
    if (group != looked_at) continue;
    if (joiners.empty() || !group || group->generation() == aborted_generation) continue;
    aborted_generation = group->generation();
    o_.log->info("worker {}: worker(s) {} ask to join: re-forming the allreduce group", self(), fmt::join(joiners, ", "));
    group->abort(fmt::format("worker(s) {} join the group", fmt::join(joiners, ", ")));
  }
}

}  // namespace trib::app
