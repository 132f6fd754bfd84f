// What a distributed worker adds to a run: its place among the workers, the coordinator's
// store, and how its update strategy is built. Absent (the default), the run is one local
// process and updates through a LocalUpdate.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trib/config/job_config.h"
#include "trib/optim/optimizer.h"
#include "trib/optim/schedule.h"
#include "trib/update/update_strategy.h"

namespace trib::train {

// What an update strategy is built from, once the loop knows the model.
struct UpdateInputs {
  const config::JobConfig& job;        // as it runs (config/derived_settings.h)
  std::vector<std::string> trainable;  // trainable parameter names, in gradient order
  std::shared_ptr<const Optimizer> optimizer;
  std::shared_ptr<const Schedule> schedule;
};

// The local strategy: clipping (training.clip_norm) and the optimizer on this process.
std::unique_ptr<update::UpdateStrategy> make_local_update(const UpdateInputs& inputs);

struct Distribution {
  int worker_index = 0;
  int workers = 1;
  bool chief() const { return worker_index == 0; }
  // Builds the update strategy (the cluster runtime passes the strategy factory,
  // include/trib/strategy/make_strategy.h). Empty: make_local_update.
  std::function<std::unique_ptr<update::UpdateStrategy>(const UpdateInputs&)> make_update;
  // The coordinator's key-value store. The chief hands the data position to resume from to
  // the other workers through it, and stream workers their Kafka offsets at every checkpoint.
  std::function<void(const std::string& key, const std::string& value)> publish;
  std::function<std::optional<std::string>(const std::string& key)> lookup;
  // Whether the coordinator no longer lists worker `index` (lost). An allreduce stream job's
  // chief, waiting at a checkpoint barrier for a worker's offsets, gives way instead of waiting
  // for a worker that will never offer them (stream_sync.h). Empty: never.
  std::function<bool(int index)> worker_lost;
  // data.assignment: dynamic (parameter servers): sends a data claim (JSON) to parameter
  // server 0 and returns its answer; the worker then reads the chunks it is given
  // (chunked_batch_source.h). Empty: fixed shards.
  std::function<std::string(const std::string& request)> claim_data;
  // Tests only (app/fault_hooks.h, TRIB_TEST_FAULT): called at a named point of a stream job's
  // training ("allreduce-stream-rollback", "stream-after-last-step"), where it may hold this
  // process. Empty: none (the usual case).
  std::function<void(const std::string& point)> fault_point;
};

}  // namespace trib::train
