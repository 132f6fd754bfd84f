// PsUpdate's side of a parameter server's automatic restore (trib/ps/ps_recovery.h): the
// chief restores every server from its newest checkpoint in a new generation and announces
// it; every worker reconnects where a connection closed, pulls the restored values and
// rewinds its loop to the checkpoint's step and data.
#include <algorithm>
#include <filesystem>
#include <thread>

#include "ps/fan_out.h"
#include "ps/ps_wire.h"
#include "ps/rolled_back.h"
#include "trib/checkpoint/checkpoint.h"
#include "trib/ps/strategy_ps.h"

namespace trib::ps {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

// Between tries while a relaunched server is not reachable yet, or a restore not announced.
constexpr std::chrono::milliseconds kRetryPause{100};
// With backups: how long a shard's published address is tried before its backup is.
constexpr std::chrono::milliseconds kShardAddressTry{1000};
// What a relaunched chief's restore names as lost (in every worker's rewind line and the report).
constexpr const char* kChiefLost = "worker 0 (the chief)";

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace

std::string redone_key(std::int64_t generation, int worker) {
  return fmt::format("ps/restore/{}/redone/{}", generation, worker);
}

proto::Body PsUpdate::request(proto::Type type) const {
  proto::Body b = proto::make_body(type);
  b.header.worker = o_.worker_index;
  b.header.generation = generation();
  return b;
}

std::optional<update::Rewind> PsUpdate::take_rewind() {
  std::optional<update::Rewind> out = std::move(rewind_);
  rewind_.reset();
  return out;
}

std::string PsUpdate::reconnect_closed(Clock::time_point deadline, std::vector<char>* reconnected) {
  std::string names;
  for (std::size_t p = 0; p < o_.servers.size(); ++p) {
    if (reconnected != nullptr && reconnected->size() < o_.servers.size()) reconnected->resize(o_.servers.size(), 0);
    if (o_.servers[p]->is_open()) {
      if (reconnected != nullptr && (*reconnected)[p] != 0)
        names += fmt::format("{}ps {}", names.empty() ? "" : ", ", p);  // on an earlier try
      continue;
    }
    // With backups, the shard's address names the server acting for it; if that one is gone
    // too, its backup, holding no copy, takes the shard over from this restore (PsBackup).
    o_.servers[p] = o_.recovery.reconnect_or_backup(static_cast<int>(p), left_until(deadline), kShardAddressTry);
    if (reconnected != nullptr) (*reconnected)[p] = 1;
    names += fmt::format("{}ps {}", names.empty() ? "" : ", ", p);
  }
  return names;
}

json PsUpdate::restore_job(const std::string& why) {
  const auto deadline = Clock::now() + o_.recovery.timeout;
  std::vector<char> reconnected;  // every server lost, over the tries (a second lost during one)
  for (;;) {
    try {
      // Every server reachable: a lost one's relaunched process, at the address it published.
      const std::string lost = reconnect_closed(deadline, &reconnected);
      // Newer than every request sent so far, which carry at most the membership's generation.
      std::int64_t g = o_.recovery.generation ? o_.recovery.generation() + 1 : 0;
      g = std::max(g, generation() + 1);
      std::optional<ValidCheckpoint> found;
      if (!o_.recovery.checkpoints.empty()) found = load_latest_valid(o_.recovery.checkpoints);
      fan_out_->run(o_.servers.size(), [&](std::size_t p) {
        if (found) {
          restore_server(static_cast<int>(p), found->checkpoint, g);
          return;
        }
        TRIB_CHECK(p < initial_values_.size(), Error,
                   "worker 0: a parameter server was lost before the first checkpoint, and this run started from one "
                   "that is gone");
        proto::Body b = proto::make_body(proto::Type::init);
        b.header.generation = g;
        exchange(static_cast<int>(p), b, initial_values_[p].clone());
      });
      // Variables that live on no server (batch-norm statistics) go back too.
      if (vars_ != nullptr && found) {
        for (const std::string& name : vars_->names()) {
          const bool on_server = std::any_of(o_.variables.begin(), o_.variables.end(),
                                             [&](const VariableInfo& v) { return v.name == name; });
          if (!on_server && found->checkpoint.contains(name)) vars_->set(name, found->checkpoint.tensor(name).clone());
        }
      }
      if (vars_ != nullptr && !found)
        for (const auto& [name, value] : initial_local_) vars_->set(name, value.clone());
      json notice = {{"generation", g},
                     {"step", found ? found->checkpoint.step() : 0},
                     {"checkpoint", found ? found->checkpoint.dir().string() : ""},
                     {"data_position", found ? found->checkpoint.manifest().data_position : json()},
                     // A stream job's Kafka offsets (the "kafka" section) rewind with the servers.
                     {"sections", found ? json(found->checkpoint.manifest().sections) : json()},
                     {"lost", lost.empty() ? why : lost}};
      if (o_.recovery.publish) o_.recovery.publish(kRestoreKey, notice.dump());
      if (o_.log)
        o_.log(fmt::format("worker 0: parameter server restore: {} lost; every server reloaded {} in generation {}",
                           !lost.empty() ? lost : why == kChiefLost ? why : fmt::format("a server ({})", why),
                           found ? fmt::format("checkpoint {} (step {})", found->checkpoint.dir().string(),
                                               found->checkpoint.step())
                                 : std::string("the initial values (no checkpoint yet: back to step 0)"),
                           g));
      return notice;
    } catch (const Unavailable&) {
      // Lost again, or the relaunched server not up yet: try again while there is time.
    } catch (const RolledBack&) {
    }
    TRIB_CHECK(Clock::now() < deadline, Timeout,
               "worker 0: the lost parameter server did not come back within {} s ({}); stopping", 
               std::chrono::duration_cast<std::chrono::seconds>(o_.recovery.timeout).count(), why);
    std::this_thread::sleep_for(kRetryPause);
  }
}

void PsUpdate::take_back(VariableStore& vars) {
  vars_ = &vars;
  keep_initial_values(vars);
  json notice = restore_job(kChiefLost);
  restart_generation_ = std::max(restart_generation_, notice["generation"].get<std::int64_t>());
  restores_.push_back(notice);
}

json PsUpdate::await_restore() {
  const auto deadline = Clock::now() + o_.recovery.timeout;
  // A chief waiting for this worker at a stream checkpoint's barrier gives way (kRestoreWantedKey).
  if (o_.recovery.publish) o_.recovery.publish(update::kRestoreWantedKey, std::to_string(restart_generation_));
  for (;;) {
    std::optional<std::string> text = o_.recovery.lookup ? o_.recovery.lookup(kRestoreKey) : std::nullopt;
    if (text && !text->empty()) {
      json notice = json::parse(*text, nullptr, false);
      TRIB_CHECK(notice.is_object() && notice.value("generation", json()).is_number_integer(), InvalidArgument,
                 "worker {}: the restore announced under {} is not {{\"generation\": G, ...}}: '{}'", o_.worker_index,
                 kRestoreKey, *text);
      if (notice["generation"].get<std::int64_t>() > generation()) {
        reconnect_closed(deadline);
        return notice;
      }
    }
    TRIB_CHECK(Clock::now() < deadline, Timeout,
               "worker {}: a parameter server was lost, and the chief did not restore the job within {} s",
               o_.worker_index, std::chrono::duration_cast<std::chrono::seconds>(o_.recovery.timeout).count());
    std::this_thread::sleep_for(kRetryPause);
  }
}

void PsUpdate::recover(std::int64_t step, const std::string& why) {
  TRIB_CHECK(vars_ != nullptr, InvalidArgument, "worker {}: recover before start", o_.worker_index);
  const auto deadline = Clock::now() + o_.recovery.timeout;
  for (;;) {
    const std::int64_t before = restart_generation_;
    try {
      json notice = o_.worker_index == 0 ? restore_job(why) : await_restore();
      const std::int64_t g = notice["generation"].get<std::int64_t>();
      restart_generation_ = std::max(restart_generation_, g);
      // The restored values, and the step this worker continues from (the checkpoint's).
      Pulled read = pull_all(-1, *vars_);
      const std::string checkpoint = notice.value("checkpoint", "");
      // A worker behind the checkpoint's step (async: each counts its own) redoes none.
      const std::int64_t redone = std::max<std::int64_t>(0, step - read.step);
      steps_redone_ += redone;
      if (o_.recovery.publish) o_.recovery.publish(redone_key(g, o_.worker_index), std::to_string(redone));
      if (o_.worker_index == 0) restores_.push_back(notice);
      const json& position = notice.contains("data_position") ? notice["data_position"] : json();
      const json& sections = notice.contains("sections") ? notice["sections"] : json();
      rewind_ = update::Rewind{
          read.step, position.is_null() ? "" : position.dump(),
          fmt::format("parameter server restore ({} lost) from {}", notice.value("lost", "a server"),
                      checkpoint.empty() ? std::string("the initial values (no checkpoint yet)") : checkpoint),
          g, sections.is_object() ? sections.dump() : ""};
      return;
    } catch (const Unavailable&) {
      // A server lost again during the restore (or this worker's connection to the lost one
      // closed only now): the chief starts over, the others look again.
      restart_generation_ = before;
    } catch (const RolledBack&) {
      restart_generation_ = before;  // restored again meanwhile: the newer announcement counts
    }
    TRIB_CHECK(Clock::now() < deadline, Timeout, "worker {}: could not rejoin the restored job within {} s ({})",
               o_.worker_index, std::chrono::duration_cast<std::chrono::seconds>(o_.recovery.timeout).count(), why);
    std::this_thread::sleep_for(kRetryPause);
  }
}

void PsUpdate::finish_after_restore() {
  if (!o_.recovery.enabled() || o_.worker_index == 0) return;
  // A relaunched server never heard this worker's done; the others forgot it with their
  // rollback's generation. Said again in the restore's generation, at the restored servers.
  restart_generation_ = std::max(restart_generation_, await_restore()["generation"].get<std::int64_t>());
  finish_once();
}

std::string PsUpdate::final_checkpoint_lost(const std::vector<char>& lost, const std::string& why) const {
  std::string names;
  for (std::size_t p = 0; p < lost.size(); ++p)
    if (lost[p] != 0) names += fmt::format("{}{}", names.empty() ? "" : ", ", p);
  std::optional<ValidCheckpoint> newest;
  if (!o_.recovery.checkpoints.empty()) newest = load_latest_valid(o_.recovery.checkpoints);
  const std::string run = o_.recovery.checkpoints.empty()
                              ? std::string("RUN_DIR")
                              : std::filesystem::path(o_.recovery.checkpoints).parent_path().string();
  return fmt::format("worker 0: the final checkpoint was not written: parameter server {} was lost while the chief "
                     "gathered it ({}), and its updates since the newest checkpoint went with it; {}",
                     names.empty() ? "?" : names, why,
                     newest ? fmt::format("the newest checkpoint is {} (step {}): continue from it with --resume {}",
                                          newest->checkpoint.dir().string(), newest->checkpoint.step(), run)
                            : std::string("there is no earlier checkpoint: run the job again"));
}

std::string PsUpdate::restores_report() const {
  std::string out = fmt::format("parameter server restores: {}", restores_.size());
  std::int64_t total = 0;
  for (const json& n : restores_) {
    const std::int64_t g = n["generation"].get<std::int64_t>();
    std::string per_worker;
    for (int w = 0; w < o_.workers; ++w) {
      std::optional<std::string> v = o_.recovery.lookup ? o_.recovery.lookup(redone_key(g, w)) : std::nullopt;
      if (!v || v->empty()) continue;
      total += std::stoll(*v);
      per_worker += fmt::format("{}worker {}: {}", per_worker.empty() ? "" : ", ", w, *v);
    }
    const std::string checkpoint = n.value("checkpoint", "");
    out += fmt::format("\n  {} lost: back to step {} ({}); steps redone: {}", n.value("lost", "a server"),
                       n["step"].get<std::int64_t>(),
                       checkpoint.empty() ? std::string("the initial values, no checkpoint yet") : checkpoint,
                       per_worker.empty() ? "none reported" : per_worker);
  }
  out += fmt::format("\n  steps redone in all: {}", total);
  return out;
}

}  // namespace trib::ps
