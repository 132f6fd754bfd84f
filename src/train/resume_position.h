// Where each worker's data continues after a resume. A checkpoint holds the chief's data
// position. Workers walk equal shards in step, so every worker stands at the chief's epoch
// and cursor of its own shard: exact for workers that step together (sync, allreduce), as
// close as their step counts for asynchronous ones. The chief hands the position to the
// other workers through the coordinator's store.
#pragma once

#include <cstdio>
#include <optional>

#include "trib/checkpoint/checkpoint.h"
#include "trib/data/data_position.h"
#include "trib/train/distribution.h"

namespace trib::train {

// Every worker calls this once, before its first batch. The chief passes the checkpoint it
// resumes from (or null), the others null. Returns the position to seek this worker's
// pipeline to, or nullopt: a fresh run, a checkpoint without a position, or one taken with
// another number of workers (said on `log`). Non-chief workers wait up to `timeout` for the
// chief's word (Timeout naming it).
std::optional<data::DataPosition> resume_data_position(const Distribution& dist, bool resume,
                                                       const Checkpoint* resumed, std::FILE* log,
                                                       std::chrono::milliseconds timeout = std::chrono::minutes(2));

}  // namespace trib::train
