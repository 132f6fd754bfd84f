// A relaunched chief rejoins the running job in place (docs/fault_tolerance.md, "A lost ps
// chief rejoins in place"). The servers outlive the chief: they hold the current values, the
// optimizer slots, the chief's clock (the steps it pushed) and the data cursor of its last
// applied push, and they took the chief back as a re-admitted worker when its new process
// came (sync rounds count it again from the next one; dynamic-assignment chunks it held went
// back to the others). So the new chief does what a relaunched worker does: one plain read of
// every server. Nothing is restored and nobody rewinds.
// Only a server relaunched with the chief (empty, its state gone) makes that impossible: its
// plain read is not ready, and the chief takes the job back to its newest checkpoint instead
// (take_back, strategy_ps_restore.cc). With strategy.ps_replicas a lost server's shard is at
// its backup, which holds the state, and the read is answered there.

#include <algorithm>

#include "ps/fan_out.h"
#include "ps/ps_wire.h"
#include "ps/rolled_back.h"
#include "ps/shard_failover.h"
#include "trib/ps/strategy_ps.h"

namespace trib::ps {

using Clock = std::chrono::steady_clock;

std::optional<PsUpdate::Pulled> PsUpdate::rejoin_running_job(VariableStore& vars, const Checkpoint* checkpoint) {
  if (!o_.recovery.chief_rejoins) return std::nullopt;
  // Read into a copy: `vars` keeps the values from training.seed, which take_back (and a later
  // rollback to before the first checkpoint) starts from, until every server answered.
  VariableStore read;
  for (const std::string& name : vars.names()) read.set(name, vars.get(name).clone());
  std::vector<std::optional<Pulled>> got(o_.servers.size());
  std::string why;
  try {
    fan_out_->run(o_.servers.size(), [&](std::size_t p) {
      // No wait: a server holding no state does not answer a plain read until it gets some.
      auto [ask, options] = pull_request(static_cast<int>(p), -1, Clock::now());
      got[p] = take_pull(static_cast<int>(p), -1, failover_->call(static_cast<int>(p), ask, options), read);
    });
  } catch (const Unavailable& e) {
    why = e.what();  // a server lost meanwhile, or a shard whose backup holds no copy
  } catch (const RolledBack& e) {
    why = e.what();
  }
  std::string empty;
  for (std::size_t p = 0; p < got.size() && why.empty(); ++p)
    if (!got[p]) empty += fmt::format("{}ps {}", empty.empty() ? "" : ", ", p);
  if (!empty.empty()) why = empty + " holds no state (relaunched with the chief)";
  if (!why.empty()) {
    if (o_.log)
      o_.log(fmt::format("worker 0: cannot rejoin the running job in place: {}; it is taken back to the newest "
                         "checkpoint",
                         why));
    return std::nullopt;
  }
  // A server lost before the first checkpoint: the job starts again from training.seed's values.
  if (o_.recovery.enabled() && checkpoint == nullptr) keep_initial_values(vars);
  for (const VariableInfo& v : o_.variables) vars.set(v.name, read.get(v.name));
  // Variables that live on no server (batch-norm statistics) went with the lost chief: the
  // newest checkpoint holds the nearest.
  if (checkpoint != nullptr) take_local_variables(*checkpoint, vars);
  // As pull_all: the step of the slowest server's view of this worker, the oldest cursor.
  std::vector<Pulled> each;
  for (const std::optional<Pulled>& g : got) each.push_back(*g);
  const Pulled out = resume_point(each);
  rejoined_ = true;
  if (o_.log)
    o_.log(fmt::format("worker 0: every server holds the running job's state; the chief rejoins it in place at step "
                       "{} (no restore, nobody rewinds)",
                       out.step));
  return out;
}

std::optional<std::string> PsUpdate::data_cursor_of(int worker) {
  // Each server keeps the cursor of the worker's last push it applied; a worker killed between
  // its pushes to several servers is taken at the slowest one's, as its relaunch would be.
  std::vector<std::pair<std::int64_t, std::string>> got(o_.servers.size());
  fan_out_->run(o_.servers.size(), [&](std::size_t p) {
    proto::Body ask = request(proto::Type::pull);
    ask.header.step = -1;
    ask.header.flags = proto::kFlagCursorOf;
    ask.text = std::to_string(worker);
    const proto::Body r = exchange(static_cast<int>(p), ask);
    got[p] = {r.header.step, r.text};
  });
  if (got.empty()) return std::nullopt;
  return std::min_element(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.first < b.first; })->second;
}

}  // namespace trib::ps
