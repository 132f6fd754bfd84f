// Where the coordinator publishes membership in its store, and the push that announces a
// change. Launchers, servers and tools read these keys; nothing else spells them.
#pragma once

#include <string>

#include <fmt/format.h>

namespace trib::cluster::membership_key {

// The current generation, in decimal. Every change (a member joined, left or was lost)
// starts a new one.
inline constexpr const char* kGeneration = "membership/generation";
// The roster, as JSON: {"generation": G, "members": [{"role", "index", "address",
// "incarnation"}...], "lost": [{"role", "index", "incarnation", "generation", "reason"}...]}.
// A member's incarnation is the generation it joined in: a process that rejoins (or a
// relaunched one taking a freed index) has a newer incarnation than the one it replaces.
inline constexpr const char* kRoster = "membership/roster";

// Set (to the generation of the loss) when a member was lost and the job went on without it:
// "membership/lost/worker/1". Cleared ("") when a new member takes the index again.
inline std::string lost(const std::string& role, int index) {
  return fmt::format("membership/lost/{}/{}", role, index);
}

// Set by a launcher (to the count so far) before it starts a process in place of a lost chief:
// that process takes the run back (its newest checkpoint) instead of starting a new one.
inline constexpr const char* kChiefRelaunched = "job/chief_relaunched";

}  // namespace trib::cluster::membership_key
