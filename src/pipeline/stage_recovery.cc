#include "pipeline/stage_recovery.h"

#include <fmt/format.h>

#include <thread>

#include "trib/core/error.h"

namespace trib::pipeline {

namespace {

std::string round_key(int replica) { return fmt::format("pipeline/{}/round", replica); }
std::string started_key(int replica, int stage) { return fmt::format("pipeline/{}/{}/started", replica, stage); }
std::string rollback_key(int replica, std::int64_t round) { return fmt::format("pipeline/{}/round/{}/from", replica, round); }

std::int64_t newest_round(const StageTrainerOptions& o) {
  std::optional<std::string> v = o.lookup(round_key(o.replica));
  return v ? std::stoll(*v) : 0;
}

}  // namespace

bool mark_started(const StageTrainerOptions& o) {
  const bool before = o.lookup(started_key(o.replica, o.stage)).has_value();
  o.publish(started_key(o.replica, o.stage), "1");
  return before;
}

std::int64_t open_next_round(const StageTrainerOptions& o) {
  const std::int64_t round = newest_round(o) + 1;
  o.publish(round_key(o.replica), std::to_string(round));
  return round;
}

std::int64_t await_next_round(const StageTrainerOptions& o, std::int64_t current, const std::string& lost) {
  const auto until = std::chrono::steady_clock::now() + o.timeout;
  for (;;) {
    if (const std::int64_t round = newest_round(o); round > current) return round;
    if (std::chrono::steady_clock::now() >= until)
      throw Unavailable(fmt::format("{}; no relaunched stage rejoined within {} s", lost,
                                    std::chrono::duration_cast<std::chrono::seconds>(o.timeout).count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<Checkpoint> rollback_checkpoint(const StageTrainerOptions& o, std::int64_t round,
                                              const std::filesystem::path& root) {
  const std::string key = rollback_key(o.replica, round);
  if (o.stage == 0) {
    std::optional<ValidCheckpoint> newest = load_latest_valid(root);
    o.publish(key, std::to_string(newest ? newest->checkpoint.step() : 0));
    if (!newest) return std::nullopt;
    return std::move(newest->checkpoint);
  }
  const auto until = std::chrono::steady_clock::now() + o.timeout;
  std::optional<std::string> step;
  while (!(step = o.lookup(key))) {
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "pipeline stage {}: stage 0 did not name the checkpoint of round {} within {} s", o.stage, round,
               std::chrono::duration_cast<std::chrono::seconds>(o.timeout).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (std::stoll(*step) == 0) return std::nullopt;
  return Checkpoint::load(checkpoint_dir(root, std::stoll(*step)));
}

}  // namespace trib::pipeline
