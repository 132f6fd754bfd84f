// Requests between workers and parameter servers. Bodies are small JSON; tensors carry the
// values, one flat f32 tensor per message holding every slice a server owns, in placement
// order (so one message per server per step, whatever the number of variables).
#pragma once

#include <cstdint>

namespace trib::ps::proto {

enum Method : std::uint32_t {
  kInit = 0x200,     // chief -> ps: initial values (tensor), the step to start from
  kRestore = 0x201,  // chief -> ps: load your slices from this checkpoint directory
  kPull = 0x202,     // worker -> ps: the current values; {ready:false} while the mode says wait
  kPush = 0x203,     // worker -> ps: gradients (or parameters, in averaging mode)
  kSave = 0x204,     // chief -> ps: write your shard into this checkpoint directory
  kStats = 0x205,    // chief -> ps: counters for the end-of-run report
  kDone = 0x206,     // worker -> ps: {worker}: it has taken its last step; wait for it no more
};

}  // namespace trib::ps::proto
