#include "train_stream/stream_sync.h"

#include <thread>

#include <nlohmann/json.hpp>

#include "train/training_state.h"
#include "trib/core/error.h"
#include "trib/stream/stream_position.h"

namespace trib::train_stream {

namespace {

// Store values are text: a position travels in its manifest form (training_state.h), whose
// reader validates it.
std::string encode(const data::DataPosition& p) { return train::data_position_to_json(p).dump(); }

data::DataPosition decode(const std::string& text) { return train::data_position_from_json(nlohmann::json::parse(text)); }

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
}

std::string StreamSync::wait_any(const std::vector<std::string>& keys, std::string* which) {
  auto until = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    for (const std::string& k : keys)
      if (std::optional<std::string> v = dist_.lookup(k)) {
        if (which) *which = k;
        return *v;
      }
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "worker {}: waited {} s for '{}' from the other workers of the stream job", dist_.worker_index,
               timeout_.count() / 1000, keys.front());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

StreamStart StreamSync::start(const StreamStart& chief_start) {
  if (dist_.workers == 1) return chief_start;
  if (dist_.chief()) {
    dist_.publish("stream/start/run_id", chief_start.run_id);
    dist_.publish("stream/start/offsets", encode(chief_start.offsets));
    return chief_start;
  }
  StreamStart s;
  s.run_id = wait_any({"stream/start/run_id"}, nullptr);
  s.offsets = decode(wait_any({"stream/start/offsets"}, nullptr));
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
  dist_.publish(fmt::format("stream/pos/{}/{}", step, dist_.worker_index), encode(offsets));
  std::string which;
  wait_any({fmt::format("stream/ckpt/{}", step), "stream/chief_ending"}, &which);
  return which != "stream/chief_ending";
}

data::DataPosition StreamSync::gather(std::int64_t step, const data::DataPosition& own) {
  data::DataPosition merged = kafka_fields(own);
  for (int w = 1; w < dist_.workers; ++w)
    merge_newest(merged, decode(wait_any({fmt::format("stream/pos/{}/{}", step, w),
                                                   fmt::format("stream/final/{}", w)},
                                                  nullptr)));
  return merged;
}

void StreamSync::published(std::int64_t step) {
  if (dist_.workers > 1) dist_.publish(fmt::format("stream/ckpt/{}", step), "1");
}

bool StreamSync::final_offsets(const data::DataPosition& offsets) {
  if (dist_.workers == 1) return true;
  dist_.publish(fmt::format("stream/final/{}", dist_.worker_index), encode(offsets));
  wait_any({"stream/ckpt/final"}, nullptr);
  return true;
}

void StreamSync::published_final() {
  if (dist_.workers > 1) dist_.publish("stream/ckpt/final", "1");
}

void StreamSync::ending() {
  if (dist_.workers > 1) dist_.publish("stream/chief_ending", "1");
}

data::DataPosition StreamSync::gather_final(const data::DataPosition& own) {
  ending();  // already said by the chief's last step; a caller that skipped it must not hang
  data::DataPosition merged = kafka_fields(own);
  for (int w = 1; w < dist_.workers; ++w)
    merge_newest(merged, decode(wait_any({fmt::format("stream/final/{}", w)}, nullptr)));
  return merged;
}

}  // namespace trib::train_stream
