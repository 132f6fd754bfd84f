// A parameter-server stream worker started again at the index of one that left for good takes
// its share back (docs/fault_tolerance.md, "Parameter-server stream jobs: a worker that leaves
// for good"): the store records of the return, the hand-overs and the chief's admission, and
// how the barriers count them (stream_sync.h).

#include <thread>

#include "train_stream/stream_store_text.h"
#include "train_stream/stream_sync.h"
#include "trib/core/error.h"
#include "trib/stream/stream_position.h"

namespace trib::train_stream {
namespace {

using store_text::decode;
using store_text::encode;

std::string departures_key(int w) { return fmt::format("stream/departures/{}", w); }
std::string return_key(int w) { return fmt::format("stream/return/{}", w); }
std::string hand_over_key(int w, int r, int by) { return fmt::format("stream/handover/{}/{}/{}", w, r, by); }
std::string ready_key(int w, int r) { return fmt::format("stream/ready/{}/{}", w, r); }
std::string admit_key(int w, int r) { return fmt::format("stream/admit/{}/{}", w, r); }
constexpr const char* kChiefEnding = "stream/chief_ending";

// A count or a step kept as text; nullopt when absent or not a number.
std::optional<std::int64_t> number_at(const train::Distribution& dist, const std::string& key) {
  if (!dist.lookup) return std::nullopt;
  std::optional<std::string> v = dist.lookup(key);
  if (!v || v->empty()) return std::nullopt;
  try {
    return std::stoll(*v);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

int StreamSync::departures(int w) const {
  return static_cast<int>(number_at(dist_, departures_key(w)).value_or(0));
}

int StreamSync::returns(int w) const { return static_cast<int>(number_at(dist_, return_key(w)).value_or(0)); }

void StreamSync::publish_return(int r) { dist_.publish(return_key(dist_.worker_index), std::to_string(r)); }

bool StreamSync::hand_over(int w, int r, const HandOver& h) {
  // Once per worker and return: a relaunched adopter must not overwrite what its lost process
  // handed over.
  if (dist_.lookup(hand_over_key(w, r, dist_.worker_index))) return false;
  const nlohmann::json j{{"step", h.step}, {"claim", nlohmann::json::parse(encode(stream::progress_fields(h.claim)))}};
  dist_.publish(hand_over_key(w, r, dist_.worker_index), j.dump());
  return true;
}

std::optional<StreamSync::HandOver> StreamSync::handed_over(int w, int r, int by) const {
  std::optional<std::string> v = dist_.lookup(hand_over_key(w, r, by));
  if (!v || v->empty()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*v);
  return HandOver{.step = j.at("step").get<std::int64_t>(), .claim = decode(j.at("claim").dump())};
}

std::optional<std::map<int, StreamSync::HandOver>> StreamSync::await_hand_overs(int r) {
  const int me = dist_.worker_index;
  const auto until = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    std::map<int, HandOver> got;
    int missing = -1;
    for (int x = 0; x < dist_.workers && missing < 0; ++x) {
      if (x == me || departed(x)) continue;  // gone for good too: it reads nothing of this one's
      if (std::optional<HandOver> h = handed_over(me, r, x)) got.emplace(x, std::move(*h));
      else missing = x;
    }
    if (missing < 0) return got;
    if (dist_.lookup(kChiefEnding)) return std::nullopt;
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "worker {}: waited {} s for worker {} to hand back its partitions (return {})", me,
               timeout_.count() / 1000, missing, r);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<std::int64_t> StreamSync::await_admission(int r) {
  const int me = dist_.worker_index;
  dist_.publish(ready_key(me, r), "1");
  const auto until = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    if (std::optional<std::int64_t> at = number_at(dist_, admit_key(me, r))) return at;
    // Admitted just before its end, the chief waits for this worker's final offsets: taken.
    if (dist_.lookup(kChiefEnding)) return number_at(dist_, admit_key(me, r));
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "worker {}: waited {} s for the chief to admit it back into the job (return {})", me,
               timeout_.count() / 1000, r);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<int> StreamSync::admit_ready(std::int64_t step) {
  std::vector<int> admitted;
  for (int w = 0; w < dist_.workers; ++w) {
    const int r = returns(w);
    if (r == 0 || r != departures(w) || dist_.lookup(admit_key(w, r)) || !dist_.lookup(ready_key(w, r))) continue;
    dist_.publish(admit_key(w, r), std::to_string(step));
    admitted.push_back(w);
  }
  return admitted;
}

void StreamSync::await_checkpoint(std::int64_t step) {
  wait_any({key(fmt::format("ckpt/{}", step)), kChiefEnding}, nullptr, [this] { return newer_restore().has_value(); });
}

bool StreamSync::departure_stands(int w, std::int64_t step) const {
  const int d = departures(w);
  if (d == 0) return false;
  const int r = returns(w);
  if (d > r) return true;
  // Back: its claim stands for the barriers up to the step the chief admitted it at, which it
  // takes no part in (it reads from the next step on).
  const std::optional<std::int64_t> admitted = number_at(dist_, admit_key(w, r));
  return !admitted || step <= *admitted;
}

data::DataPosition StreamSync::departure_claim(int w) const {
  std::optional<std::string> v = dist_.lookup(store_text::gone_key(w));
  return v && !v->empty() ? decode(*v) : data::DataPosition{};
}

std::optional<data::DataPosition> StreamSync::taken_back(int w) const {
  const int r = returns(w);
  if (r == 0 || r != departures(w)) return std::nullopt;
  data::DataPosition claim = stream::progress_fields(departure_claim(w));
  for (int x = 0; x < dist_.workers; ++x)
    if (std::optional<HandOver> h = handed_over(w, r, x)) stream::merge_claims(claim, h->claim);
  return claim;
}

void StreamSync::merge_hand_overs(data::DataPosition& merged) const {
  // Hand-overs are applied progress: merged with the further claim winning, a stale one adds
  // nothing, and one whose adopter no longer claims the partition keeps it counted.
  for (int w = 0; w < dist_.workers; ++w) {
    const int r = returns(w);
    if (r == 0) continue;
    for (int x = 0; x < dist_.workers; ++x)
      if (std::optional<HandOver> h = handed_over(w, r, x)) stream::merge_claims(merged, h->claim);
  }
}

}  // namespace trib::train_stream
