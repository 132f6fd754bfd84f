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

// Set ("1") by a local launcher when it does not relaunch a lost worker (cluster.max_restarts
// spent or 0): the worker is gone for good, and a parameter-server stream job hands its Kafka
// partitions to the others. Cleared ("") when the launcher starts a worker at that index again.
inline std::string given_up(int index) { return fmt::format("membership/given_up/worker/{}", index); }

// Set by a local launcher (`trib scale` down of an allreduce job) to the incarnation of the
// worker it asks to leave: that process leaves the job alone at its next epoch boundary, and
// the others go on without it. A later holder of the index (another incarnation) ignores it.
inline std::string leave_request(int index) { return fmt::format("membership/leave/worker/{}", index); }

// Set by the coordinator (to how many times the chief was lost so far) when it evicts a chief
// that the job goes on without (CoordinatorOptions::chief_may_be_lost), so before any process
// can join in its place: the next worker 0 (relaunched by a local launcher, or started again by
// its node's supervisor) takes the run back (its newest checkpoint) instead of starting a new one.
inline constexpr const char* kChiefRelaunched = "job/chief_relaunched";

// Set by the chief (to its error) when it fails with an error rather than being killed: a
// restart would fail the same way, so the coordinator ends the job at once instead of waiting
// for it to come back (CoordinatorOptions::chief_wait).
inline constexpr const char* kChiefFailed = "job/chief_failed";

}  // namespace trib::cluster::membership_key
