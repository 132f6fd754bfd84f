// The membership a coordinator announces: who holds which index in which generation, and
// which indices were lost while the job went on. It travels as JSON (membership_keys.h
// kRoster) in the store and in every kMembershipChanged push.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trib::cluster {

struct RosterEntry {
  std::string role;     // "ps" or "worker"
  int index = 0;
  std::string address;  // where its connection to the coordinator comes from
  // The generation it joined in. A rejoined or relaunched holder of the same index has a
  // newer one, so a message stamped with an older incarnation comes from a replaced process.
  std::int64_t incarnation = 0;
};

struct LostEntry {
  std::string role;
  int index = 0;
  std::int64_t incarnation = 0;  // the holder that was lost
  std::int64_t generation = 0;   // the generation its loss started
  std::string reason;
};

struct RosterView {
  std::int64_t generation = 0;
  std::vector<RosterEntry> members;
  std::vector<LostEntry> lost;  // indices lost and not taken again
};

std::string roster_to_json(const RosterView& roster);
// Throws InvalidArgument naming the missing or mistyped field.
RosterView roster_from_json(const std::string& text);

}  // namespace trib::cluster
