// Method codes and bodies of the coordinator's requests. Bodies are JSON (small,
// human-debuggable), decoded here, once, with every size bounded: an authenticated member
// still cannot make the coordinator hold more than a request's worth of memory per call.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// Keys are short paths ("ps/3/address"); values are addresses, counters and stream
// positions. Far above what the job needs, far below what could hurt.
inline constexpr std::size_t kMaxKeyBytes = 256;
inline constexpr std::size_t kMaxValueBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxRoleBytes = 32;
// The largest request body the coordinator reads: a set of the largest key and value,
// every byte JSON-escaped (\u00XX), plus the field names.
inline constexpr std::uint64_t kMaxRequestBytes = 6 * (kMaxKeyBytes + kMaxValueBytes) + 256;

// One decoded request to the coordinator: a store operation, a join or a leave.
struct Request {
  Method method = kStoreGet;
  std::string key;         // set, get, add
  std::string value;       // set
  std::int64_t delta = 0;  // add
  std::string role;        // join, leave
  int index = -1;          // join: the index asked for (-1: any); leave: the member's
  // join: a member that lost its coordinator and comes back (to it, or to a restarted one)
  // with the incarnation it holds and the newest generation it heard of.
  bool rejoin = false;
  std::int64_t incarnation = 0;
  std::int64_t generation = 0;
};

// Decodes and checks a request body. Throws InvalidArgument naming the method and what is
// wrong (not JSON, a missing or mistyped field, a key or value over its bound).
Request decode_request(std::uint32_t method, std::string_view body);

}  // namespace trib::cluster::proto
