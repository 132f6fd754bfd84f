// Method codes of the coordinator's requests. Bodies are JSON (small, human-debuggable).
#pragma once

#include <cstdint>

namespace trib::cluster::proto {

enum Method : std::uint32_t {
  kStoreSet = 0x100,
  kStoreGet = 0x101,
  kStoreAdd = 0x102,
  kJoin = 0x110,      // a role joins; the reply assigns its index and carries the job
  kLeave = 0x111,     // a role finished cleanly
  kShutdown = 0x112,  // coordinator -> member: the job is over, exit cleanly
  // coordinator -> member (one-way): membership changed; the body is the roster JSON
  // (membership_keys.h kRoster), carrying the new generation.
  kMembershipChanged = 0x113,
};

}  // namespace trib::cluster::proto
