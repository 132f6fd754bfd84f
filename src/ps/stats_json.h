// A server's counters as they travel in a stats reply: JSON under the field names below,
// written by the server and read by the chief's end-of-run report from this one place.
#pragma once

#include <string>

#include "trib/ps/ps_server.h"

namespace trib::ps::stats_key {

inline constexpr const char* kBytesIn = "bytes_in";
inline constexpr const char* kBytesOut = "bytes_out";
inline constexpr const char* kRequests = "requests";
inline constexpr const char* kApplied = "applied";
inline constexpr const char* kDroppedLate = "dropped_late";
inline constexpr const char* kRefused = "refused";
inline constexpr const char* kStaleGeneration = "stale_generation";
inline constexpr const char* kMaxClockGap = "max_clock_gap";
inline constexpr const char* kStaleness = "staleness";
inline constexpr const char* kDroppedNonFinite = "dropped_nonfinite";
inline constexpr const char* kSkippedRounds = "skipped_rounds";
inline constexpr const char* kWorkersLost = "workers_lost";
inline constexpr const char* kWorkersReadmitted = "workers_readmitted";
inline constexpr const char* kWorkersJoined = "workers_joined";
inline constexpr const char* kDataApplied = "data_applied";
inline constexpr const char* kDataTotal = "data_total";
inline constexpr const char* kDataReturned = "data_returned";
inline constexpr const char* kWorkersTraining = "workers_training";
inline constexpr const char* kWorkersAway = "workers_away";
inline constexpr const char* kRollbacks = "rollbacks";
inline constexpr const char* kRolledBackRequests = "rolled_back_requests";
inline constexpr const char* kForwarded = "forwarded";
inline constexpr const char* kDuplicatePushes = "duplicate_pushes";
inline constexpr const char* kTakeovers = "takeovers";
inline constexpr const char* kReplayedPushes = "replayed_pushes";
inline constexpr const char* kLateReplays = "late_replays";

}  // namespace trib::ps::stats_key

namespace trib::ps {

std::string stats_to_json(const PsStats& stats);
// Throws InvalidArgument naming `source` and the field for a reply that lacks one.
PsStats stats_from_json(const std::string& text, const std::string& source);

}  // namespace trib::ps
