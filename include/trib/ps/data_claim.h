// A worker's data claim to parameter server 0 under `data.assignment: dynamic`: the request
// and answer are JSON (src/ps/chunk_dispenser.h, trib/train/chunked_batch_source.h); this
// carries them in a PS `claim` message stamped with the worker's index and generation.
#pragma once

#include <cstdint>
#include <string>

#include "trib/net/transport.h"

namespace trib::ps {

// Throws what the connection throws, or InvalidArgument for a reply that is not a claim's.
// `seq`: this worker's claim number (from 1; 0: none). With strategy.ps_replicas, a claim
// retried at server 0's backup after server 0 was lost carries the same number and gets the
// answer the first one got (its chunks are the worker's already), not a second grant.
std::string claim_data(net::Connection& server0, int worker, std::int64_t generation, const std::string& request,
                       std::uint32_t seq = 0);

}  // namespace trib::ps
