// A worker's data claim to parameter server 0 under `data.assignment: dynamic`: the request
// and answer are JSON (src/ps/chunk_dispenser.h, trib/train/chunked_batch_source.h); this
// carries them in a PS `claim` message stamped with the worker's index and generation.
#pragma once

#include <cstdint>
#include <string>

#include "trib/net/transport.h"

namespace trib::ps {

// Throws what the connection throws, or InvalidArgument for a reply that is not a claim's.
std::string claim_data(net::Connection& server0, int worker, std::int64_t generation, const std::string& request);

}  // namespace trib::ps
