#include "train_stream/stream_sync.h"

#include "train_stream/stream_store_text.h"

#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>

#include "train/training_state.h"
#include "trib/cluster/membership_keys.h"
#include "trib/core/error.h"
#include "trib/stream/stream_position.h"
#include "trib/train_stream/stream_trainer.h"
#include "trib/update/group_plan.h"
#include "trib/update/update_strategy.h"

namespace trib::train_stream {

namespace {

// Set by the chief once it takes no more steps (ending()); not scoped.
constexpr const char* kChiefEndingKey = "stream/chief_ending";
// Set by the chief with the last checkpoint (published_final()), also unscoped: a relaunched
// chief that took the final state from the group writes it in a scope of its own.
constexpr const char* kFinalWrittenKey = "stream/final_written";

using store_text::decode;
using store_text::encode;
using store_text::gone_key;

// Partitions are disjoint at a barrier, unless one moved between workers within the run:
// both then claim it, and merge_claims keeps what either applied (applied_offsets.h).
void merge_newest(data::DataPosition& into, const data::DataPosition& from) { stream::merge_claims(into, from); }

}  // namespace

data::DataPosition kafka_fields(const data::DataPosition& position) {
  data::DataPosition out;
  for (const auto& [key, value] : position.fields())
    if (stream::is_stream_field(key)) out.set(key, value);
  return out;
}

StreamSync::StreamSync(const train::Distribution& dist, std::chrono::milliseconds timeout) : dist_(dist), timeout_(timeout) {
  TRIB_CHECK(dist.workers == 1 || (dist.publish && dist.lookup), InvalidArgument,
             "a stream job with {} workers needs the coordinator's store to agree on offsets", dist.workers);
  for (int w = 0; w < dist.workers; ++w) members_.push_back(w);
}

bool StreamSync::rendezvous(const std::string& what) {
  dist_.publish(key(fmt::format("{}/{}", what, dist_.worker_index)), "1");
  // A newer group planned meanwhile, or a member lost before it said so (every survivor may
  // be waiting here, so nobody's exchange has failed to plan one): the next exchange fails
  // into the re-forming.
  for (int w : members_)
    if (!wait_any({key(fmt::format("{}/{}", what, w))}, nullptr, [this, w] { return regroup_planned() || lost(w); }))
      return false;
  return true;
}

bool StreamSync::regroup_planned() const {
  if (!dist_.lookup) return false;
  std::optional<std::string> text = dist_.lookup(update::kGroupPlanKey);
  if (!text) return false;
  const std::optional<update::GroupPlan> plan = update::parse_group_plan(*text);
  return plan && plan->generation > scope_;
}

std::optional<std::string> StreamSync::wait_any(const std::vector<std::string>& keys, std::string* which,
                                                const std::function<bool()>& give_way) {
  // The restore keys are looked at less often than the barrier's own: each is a store lookup.
  constexpr int kGiveWayEvery = 25;
  auto until = std::chrono::steady_clock::now() + timeout_;
  for (int round = 0;; ++round) {
    for (const std::string& k : keys)
      if (std::optional<std::string> v = dist_.lookup(k)) {
        if (which) *which = k;
        return v;
      }
    if (give_way && round % kGiveWayEvery == 0 && give_way()) return std::nullopt;
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "worker {}: waited {} s for '{}' from the other workers of the stream job", dist_.worker_index,
               timeout_.count() / 1000, keys.front());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

namespace {
std::string scoped_key(std::int64_t scope, const std::string& rest) { return fmt::format("stream/g{}/{}", scope, rest); }
}  // namespace

std::string StreamSync::key(const std::string& rest) const { return scoped_key(scope_, rest); }

bool group_rolled_back(const train::Distribution& dist, std::int64_t generation, const std::vector<int>& members) {
  return std::all_of(members.begin(), members.end(), [&](int w) {
    return dist.lookup(scoped_key(generation, fmt::format("{}/{}", kRewound, w))).has_value();
  });
}

bool chief_past_last_step(const train::Distribution& dist) {
  return dist.lookup && dist.lookup(kChiefEndingKey).has_value();
}

std::optional<AnnouncedRestore> StreamSync::newer_restore() const {
  std::optional<AnnouncedRestore> r = announced_restore();
  if (!r || r->generation <= scope_) return std::nullopt;
  return r;
}

std::optional<AnnouncedRestore> StreamSync::announced_restore() const {
  if (!dist_.lookup) return std::nullopt;
  std::optional<std::string> text = dist_.lookup(update::kRestoreKey);
  if (!text || text->empty()) return std::nullopt;
  const nlohmann::json n = nlohmann::json::parse(*text, nullptr, false);
  if (!n.is_object() || !n.value("generation", nlohmann::json()).is_number_integer()) return std::nullopt;
  AnnouncedRestore r;
  r.generation = n["generation"].get<std::int64_t>();
  r.step = n.value("step", std::int64_t{0});
  if (n.contains("sections") && n["sections"].is_object()) r.sections = n["sections"].dump();
  return r;
}

bool StreamSync::restore_wanted() const {
  std::optional<std::string> v = dist_.lookup(update::kRestoreWantedKey);
  if (!v || v->empty()) return false;
  try {
    return std::stoll(*v) >= scope_;  // a worker of this scope waits for a restore
  } catch (const std::exception&) {
    return false;
  }
}

StreamStart StreamSync::start(const StreamStart& chief_start) {
  // A worker relaunched after a restore meets the others in the scope they rewound to.
  if (std::optional<AnnouncedRestore> r = newer_restore()) scope_ = r->generation;
  if (dist_.workers == 1) return chief_start;
  relaunched_ = dist_.lookup(fmt::format("stream/assigned/{}", dist_.worker_index)).has_value();
  // A relaunched chief takes the running job's start, as the others did: its run id and the
  // progress the run started from (not its newest checkpoint's: its share resumes at its cursor).
  if (dist_.chief() && !relaunched_) {
    dist_.publish("stream/start/run_id", chief_start.run_id);
    dist_.publish("stream/start/offsets", encode(chief_start.offsets));
    return chief_start;
  }
  StreamStart s;
  s.run_id = *wait_any({"stream/start/run_id"}, nullptr);
  s.offsets = decode(*wait_any({"stream/start/offsets"}, nullptr));
  return s;
}

void StreamSync::await_assignment(const std::function<bool()>& owns_partitions, const std::function<void()>& service,
                                  std::chrono::milliseconds limit, const std::string& topic) {
  if (dist_.workers == 1) return;
  const auto until = std::chrono::steady_clock::now() + limit;
  bool said = false;
  for (int ready = 0;;) {
    service();
    if (!said && owns_partitions()) {
      dist_.publish(fmt::format("stream/assigned/{}", dist_.worker_index), "1");
      said = true;
    }
    while (ready < dist_.workers && dist_.lookup(fmt::format("stream/assigned/{}", ready))) ++ready;
    if (ready == dist_.workers) return;
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "worker {}: {} after {} s: topic '{}' needs at least as many partitions as there are workers ({})",
               dist_.worker_index,
               said ? fmt::format("worker {} still owns no partition", ready) : std::string("this worker owns no partition"),
               limit.count() / 1000, topic, dist_.workers);
  }
}

bool StreamSync::offer(std::int64_t step, const data::DataPosition& offsets) {
  if (dist_.workers == 1) return true;
  dist_.publish(key(fmt::format("pos/{}/{}", step, dist_.worker_index)), encode(offsets));
  std::string which;
  // A lost chief (allreduce, relaunched) gives way too: the survivors go on without it.
  std::optional<std::string> v = wait_any({key(fmt::format("ckpt/{}", step)), kChiefEndingKey}, &which,
                                          [this] { return newer_restore().has_value() || regroup_planned() || lost(0); });
  return v && which != kChiefEndingKey && *v == "1";
}

std::optional<data::DataPosition> StreamSync::gather(std::int64_t step, const data::DataPosition& own) {
  data::DataPosition merged = kafka_fields(own);
  for (int w : members_) {
    if (w == dist_.worker_index) continue;
    std::optional<std::string> v =
        wait_for_worker(w, {key(fmt::format("pos/{}/{}", step, w)), key(fmt::format("final/{}", w))},
                        [this, w] { return restore_wanted() || newer_restore().has_value() || regroup_planned() || lost(w); },
                        step);
    if (!v) return std::nullopt;
    merge_newest(merged, decode(*v));
  }
  merge_hand_overs(merged);
  return merged;
}

void StreamSync::published(std::int64_t step, bool written) {
  if (dist_.workers > 1) dist_.publish(key(fmt::format("ckpt/{}", step)), written ? "1" : "0");
}

bool StreamSync::final_offsets(const data::DataPosition& offsets) {
  if (dist_.workers == 1) return true;
  dist_.publish(key(fmt::format("final/{}", dist_.worker_index)), encode(offsets));
  // A chief lost meanwhile (after the run's last exchange) gives way too: its relaunched
  // process takes the final state from this group (StreamHooks), then writes the checkpoint.
  return wait_any({key("ckpt/final"), kFinalWrittenKey}, nullptr,
                  [this] { return newer_restore().has_value() || chief_lost(); })
      .has_value();
}

void StreamSync::published_final() {
  if (dist_.workers == 1) return;
  dist_.publish(key("ckpt/final"), "1");
  dist_.publish(kFinalWrittenKey, "1");
}

void StreamSync::ending() {
  if (dist_.workers > 1) dist_.publish(kChiefEndingKey, "1");
}

data::DataPosition StreamSync::gather_final(const data::DataPosition& own,
                                            const std::function<std::optional<data::DataPosition>(int)>& last_cursor,
                                            std::vector<int>* taken) {
  ending();  // already said by the chief's last step; a caller that skipped it must not hang
  data::DataPosition merged = kafka_fields(own);
  for (int w : members_) {
    if (w == dist_.worker_index) continue;
    std::optional<std::string> v =
        wait_for_worker(w, {key(fmt::format("final/{}", w))}, [this, w] { return lost(w); }, kFinalBarrier);
    if (v) {
      merge_newest(merged, decode(*v));
      continue;
    }
    // A worker lost after its last exchange: nobody re-forms the group, and its final offsets
    // never come. Every member applied every step, the last one included, so its cursor of the
    // last step (the group shares them each step) is exactly what it would have handed over.
    std::optional<data::DataPosition> at = last_cursor ? last_cursor(w) : std::nullopt;
    TRIB_CHECK(at.has_value(), Unavailable,
               "worker {} was lost before handing over its final Kafka offsets, and the group kept no cursor of its "
               "last step: the last checkpoint cannot hold them",
               w);
    merge_newest(merged, kafka_fields(*at));
    if (taken) taken->push_back(w);
  }
  merge_hand_overs(merged);
  return merged;
}

std::optional<std::string> StreamSync::wait_for_worker(int w, const std::vector<std::string>& keys,
                                                       const std::function<bool()>& give_way, std::int64_t step) {
  for (;;) {
    // Its departure claim stands in for it while it is gone (and while it comes back, until the
    // chief admits it: departure_stands); its own offers and finals come first when it has them.
    const bool settles = static_cast<bool>(settle_);
    std::optional<std::string> v = wait_any(keys, nullptr, [&] {
      return give_way() || departure_stands(w, step) || (settles && given_up(w));
    });
    if (v || give_way()) return v;
    if (departure_stands(w, step)) return encode(departure_claim(w));
    // Gone for good without a word (the launcher gave up on it): its departure is published
    // now, from the servers' cursor, and taken like a leaver's on the next round.
    if (settles && given_up(w) && !departed(w)) settle_(w);
  }
}

void StreamSync::publish_departure(int w, const data::DataPosition& claim) {
  if (dist_.workers == 1) return;
  // The claim first, then its number: a reader that sees the number sees this claim.
  dist_.publish(gone_key(w), encode(kafka_fields(claim)));
  dist_.publish(fmt::format("stream/departures/{}", w), std::to_string(returns(w) + 1));
}

std::optional<data::DataPosition> StreamSync::departed(int w) const {
  if (!dist_.lookup) return std::nullopt;
  // The number before the claim (publish_departure's order); a claim taken back stands no more.
  const int d = departures(w);
  if (d == 0 || d <= returns(w)) return std::nullopt;
  std::optional<std::string> v = dist_.lookup(gone_key(w));
  if (!v || v->empty()) return std::nullopt;
  return decode(*v);
}

bool StreamSync::given_up(int w) const {
  if (!dist_.lookup) return false;
  std::optional<std::string> v = dist_.lookup(cluster::membership_key::given_up(w));
  return v && !v->empty();
}

}  // namespace trib::train_stream
