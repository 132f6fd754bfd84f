#include "train/resume_position.h"

#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "train/training_state.h"
#include "trib/core/error.h"
#include "trib/data/dataset_source.h"

namespace trib::train {
namespace {

constexpr char kKey[] = "train/resume_position";

// The chief's position (JSON as in the manifest, "" for none) moved to this worker's shard.
std::optional<data::DataPosition> for_this_worker(const std::string& saved, const Distribution& dist,
                                                  std::FILE* log) {
  if (saved.empty()) return std::nullopt;
  const data::DataPosition chief = data_position_from_json(nlohmann::json::parse(saved));
  try {
    return data::position_in_shard(chief, dist.worker_index, dist.workers);
  } catch (const InvalidArgument& e) {
    fmt::print(log, "worker {}: the data starts its epoch afresh ({})\n", dist.worker_index, e.what());
    return std::nullopt;
  }
}

}  // namespace

std::optional<data::DataPosition> resume_data_position(const Distribution& dist, bool resume,
                                                       const Checkpoint* resumed, std::FILE* log,
                                                       std::chrono::milliseconds timeout) {
  if (!resume) return std::nullopt;
  const bool shared = dist.workers > 1 && dist.publish && dist.lookup;
  if (dist.chief()) {
    const nlohmann::json& position = resumed ? resumed->manifest().data_position : nlohmann::json();
    const std::string saved = position.is_null() ? "" : position.dump();
    if (shared) dist.publish(kKey, saved);
    return for_this_worker(saved, dist, log);
  }
  if (!shared) return std::nullopt;
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::optional<std::string> saved = dist.lookup(kKey)) return for_this_worker(*saved, dist, log);
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "worker {}: the chief (worker 0) did not say where the data resumes within {} s", dist.worker_index,
               std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace trib::train
